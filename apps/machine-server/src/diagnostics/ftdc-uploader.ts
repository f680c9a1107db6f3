/**
 * Uploads completed FTDC files (machine-runtime.md A6) with DataSync `FileUpload` (type FILE) through
 * the data manager's own syncer (`createDataSyncer`, the same FileUpload path as `additional_sync_paths`):
 * a file is deleted only after the cloud acknowledged it, failures back off, terminal ones move to
 * `failed/`. It runs whether or not a data manager service is configured, on its own schedule, and only
 * takes `.ftdc` files the writer has finished with (never the one being appended to).
 */
import type { Clock } from '../clock.ts';
import type { UploadTarget } from '../data/capture-file-upload.ts';
import { createDataSyncer, type SyncerStats } from '../data/data-syncer.ts';
import type { Logger } from '../logging/logger.ts';

export interface FtdcUploaderOptions {
  readonly directory: string;
  readonly target: () => UploadTarget | undefined;
  /** The file the writer is appending to (left alone). */
  readonly currentFile: () => string | undefined;
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface FtdcUploader {
  stats(): SyncerStats;
  close(): Promise<void>;
}

export function startFtdcUploader(options: FtdcUploaderOptions): FtdcUploader {
  const syncer = createDataSyncer({
    captureDir: options.directory,
    additionalSyncPaths: [],
    fileLastModifiedMs: 0,
    maxConcurrentUploads: 1,
    tags: [],
    target: options.target,
    beforeWalk: async () => {},
    accept: (candidate) => candidate.path.endsWith('.ftdc') && candidate.path !== options.currentFile(),
    clock: options.clock,
    logger: options.logger,
  });
  syncer.startSchedule({ intervalMs: options.intervalMs, shouldSync: async () => true });
  return { stats: () => syncer.stats(), close: () => syncer.close() };
}
