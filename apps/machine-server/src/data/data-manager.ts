/**
 * The data manager service (`rdk:service:data_manager`, model `builtin`; machine-runtime.md A5):
 * collectors capture configured methods to files, the syncer uploads completed files on
 * `sync_interval_mins`, and the deletion policy keeps a full disk from stopping the machine.
 * Built once per configuration: a changed configuration (or a rebuilt component) rebuilds the service;
 * closing it completes every open capture file and stops uploads without losing anything.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Clock, systemClock } from '../clock.ts';
import { errorMessage, MachineError, unimplemented } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import { isSensor } from '../resources/apis/sensor.ts';
import type { Resource } from '../resources/resource.ts';
import { type ResourceName, shortName } from '../resources/resource-name.ts';
import { uploadArbitraryFile } from './arbitrary-file-upload.ts';
import { runCaptureControl } from './capture-control.ts';
import { recoverInterruptedCaptureFiles } from './capture-file-recovery.ts';
import type { UploadTarget } from './capture-file-upload.ts';
import { fileExtensionForMime } from './capture-methods.ts';
import { datasetUploadDirName, dirMode, fileMode } from './capture-paths.ts';
import { type CaptureTarget, createCaptureSet } from './capture-set.ts';
import type { DataManager, DataManagerStatus } from './data-manager-api.ts';
import type { DataManagerConfig } from './data-manager-config.ts';
import { createDataSyncer } from './data-syncer.ts';
import { applyDeletionPolicy, type FileSystemUsage } from './disk-usage-policy.ts';
import type { BackoffPolicy } from './retry-backoff.ts';

export interface DataManagerOptions {
  readonly name: ResourceName;
  readonly config: DataManagerConfig;
  readonly targets: readonly CaptureTarget[];
  /** Every resource the service can see (its weak dependencies), for the selective-sync sensor. */
  readonly resources: readonly Resource[];
  /** The cloud to upload to, or undefined (not cloud managed / no connection yet). */
  readonly cloud: () => UploadTarget | undefined;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Tuning for tests; the defaults are the reference's (200 ms … 1 h, offline 60 s). */
  readonly backoff?: BackoffPolicy;
  /** How often the capture control sensor is polled (default 100 ms). */
  readonly captureControlIntervalMs?: number;
  /** How often the disk-full policy runs (default 30 s). */
  readonly deletionCheckIntervalMs?: number;
  readonly fileSystemUsage?: (dir: string) => Promise<FileSystemUsage>;
}

export const defaultDeletionCheckIntervalMs = 30_000;

export type { CaptureTarget } from './capture-set.ts';

export async function startDataManager(options: DataManagerOptions): Promise<DataManager> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  await mkdir(config.captureDir, { recursive: true, mode: dirMode });
  await recoverInterruptedCaptureFiles(config.captureDir, logger);
  if (config.mongoCaptureConfigured) {
    logger.warn(
      'mongo_capture_config is not supported by this machine-server; tabular data goes to the cloud only',
    );
  }

  const captureSet = createCaptureSet({
    captureDir: config.captureDir,
    serviceTags: config.tags,
    maxFileSizeBytes: config.maximumCaptureFileSizeBytes,
    clock,
    logger,
  });
  if (!config.captureDisabled) await captureSet.apply(options.targets);
  const syncer = createDataSyncer({
    captureDir: config.captureDir,
    additionalSyncPaths: config.additionalSyncPaths,
    fileLastModifiedMs: config.fileLastModifiedMs,
    maxConcurrentUploads: config.maximumNumSyncThreads,
    tags: config.tags,
    target: options.cloud,
    beforeWalk: () => captureSet.flush(),
    clock,
    logger,
    ...(options.backoff ? { backoff: options.backoff } : {}),
  });
  if (!config.syncDisabled) {
    syncer.startSchedule({ intervalMs: config.syncIntervalMs, shouldSync: selectiveSyncGate(options) });
  }

  const stop = new AbortController();
  const deletion = config.captureDisabled
    ? Promise.resolve()
    : runDeletionPolicyLoop(options, syncer.isUploading, stop.signal);
  const control =
    config.captureDisabled || !config.captureControlSensor
      ? Promise.resolve()
      : runCaptureControl(
          {
            control: config.captureControlSensor,
            base: options.targets,
            resources: options.resources,
            apply: (targets) => captureSet.apply(targets),
            logger,
            ...(options.captureControlIntervalMs ? { intervalMs: options.captureControlIntervalMs } : {}),
          },
          stop.signal,
        );

  let closing: Promise<void> | undefined;
  const status = (): DataManagerStatus => {
    const syncStats = syncer.stats();
    const captureStats = captureSet.stats();
    return {
      collectors: captureSet.size,
      capturedReadings: captureStats.captured,
      captureFailures: captureStats.failed,
      uploadedFiles: syncStats.uploadedFiles,
      uploadedReadings: syncStats.uploadedReadings,
      failedFiles: syncStats.failedFiles,
      retries: syncStats.retries,
    };
  };

  return {
    name: options.name,
    async sync(callOptions) {
      await syncer.syncNow(callOptions.signal);
    },
    async uploadBinaryDataToDatasets(upload, callOptions) {
      const target = options.cloud();
      if (!target) throw new MachineError('FailedPrecondition', 'not connected to the cloud');
      if (upload.datasetIds.length === 0) {
        throw new MachineError('InvalidArgument', 'dataset_ids: at least one dataset ID is required');
      }
      const dir = path.join(config.captureDir, datasetUploadDirName);
      await mkdir(dir, { recursive: true, mode: dirMode });
      const filePath = path.join(dir, `${randomUUID()}${fileExtensionForMime(upload.mimeType)}`);
      await writeFile(filePath, upload.binaryData, { mode: fileMode });
      try {
        await uploadArbitraryFile(
          target,
          filePath,
          {
            tags: [...new Set([...config.tags, ...upload.tags])],
            datasetIds: [...new Set(upload.datasetIds)],
          },
          callOptions.signal,
        );
      } finally {
        await rm(filePath, { force: true });
      }
    },
    status,
    async doCommand() {
      throw unimplemented('DoCommand of the data manager');
    },
    /** Idempotent. Completes open capture files; uploads in flight are aborted (their files stay). */
    /**
     * Bounded by `signal` (the resource manager's close deadline): past it, the call returns while a
     * capture call that ignores its abort may still be finishing (its file is completed afterwards).
     */
    close(signal) {
      closing ??= (async () => {
        stop.abort();
        await control;
        await captureSet.close();
        await syncer.close();
        await deletion;
      })();
      if (!signal) return closing;
      return Promise.race([
        closing,
        new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          else signal.addEventListener('abort', () => resolve(), { once: true });
        }).then(() => {
          logger.warn('data manager close deadline passed; capture files are completed in the background');
        }),
      ]);
    },
  };
}

/** `selective_syncer_name`: scheduled sync only while that sensor's reading `should_sync` is true. */
function selectiveSyncGate(options: DataManagerOptions): (signal: AbortSignal) => Promise<boolean> {
  const name = options.config.selectiveSyncerName;
  if (name === '') return async () => true;
  return async (signal) => {
    const sensor = options.resources.find(
      (resource) => isSensor(resource) && (shortName(resource.name) === name || resource.name.name === name),
    );
    if (!sensor || !isSensor(sensor)) {
      options.logger.warn('selective sync sensor not found; not syncing', { selective_syncer_name: name });
      return false;
    }
    try {
      const readings = await sensor.getReadings({ signal });
      if (typeof readings.should_sync !== 'boolean') {
        options.logger.warn(
          'selective sync sensor reading "should_sync" is missing or not a bool; not syncing',
          {
            selective_syncer_name: name,
          },
        );
        return false;
      }
      return readings.should_sync;
    } catch (error) {
      options.logger.warn('selective sync sensor failed; not syncing', {
        selective_syncer_name: name,
        error: errorMessage(error),
      });
      return false;
    }
  };
}

async function runDeletionPolicyLoop(
  options: DataManagerOptions,
  isUploading: (filePath: string) => boolean,
  signal: AbortSignal,
): Promise<void> {
  const intervalMs = options.deletionCheckIntervalMs ?? defaultDeletionCheckIntervalMs;
  while (!signal.aborted) {
    try {
      await sleep(intervalMs, undefined, { signal });
    } catch {
      return;
    }
    try {
      await applyDeletionPolicy({
        captureDir: options.config.captureDir,
        diskUsageDeletionThreshold: options.config.diskUsageDeletionThreshold,
        captureDirDeletionThreshold: options.config.captureDirDeletionThreshold,
        deleteEveryNth: options.config.deleteEveryNthWhenDiskFull,
        isUploading,
        logger: options.logger,
        ...(options.fileSystemUsage ? { fileSystemUsage: options.fileSystemUsage } : {}),
      });
    } catch (error) {
      options.logger.error('disk usage check failed', { error: errorMessage(error) });
    }
  }
}
