/**
 * One capture method of one resource (machine-runtime.md A5.2): calls the method every 1/Hz seconds on
 * a drift-free schedule (tick k is due at start + k·interval; a tick missed by more than a whole interval
 * is skipped rather than bursted), hands results through a bounded queue to a writer loop that appends
 * them to capture files. Failed calls are logged at most once per identical message per 2 s.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../clock.ts';
import { errorMessage } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import type { Logger } from '../logging/logger.ts';
import type { Resource } from '../resources/resource.ts';
import { createBoundedQueue } from './bounded-queue.ts';
import type { CapturedReading, CaptureFileMetadata } from './capture-file-format.ts';
import { createTabularCaptureWriter, writeBinaryCaptureFile } from './capture-file-writer.ts';
import {
  type CaptureMethod,
  type CaptureResult,
  fileExtensionForMime,
  tabularFileExtension,
} from './capture-methods.ts';
import { methodCaptureDir } from './capture-paths.ts';

export interface CollectorOptions {
  readonly resource: Resource;
  /** API triple of the resource, e.g. `rdk:component:sensor`. */
  readonly componentType: string;
  /** Short name of the resource. */
  readonly componentName: string;
  readonly methodName: string;
  readonly captureMethod: CaptureMethod;
  readonly frequencyHz: number;
  readonly additionalParams: JsonObject;
  readonly tags: readonly string[];
  readonly captureDir: string;
  readonly queueSize: number;
  readonly bufferSizeBytes: number;
  readonly maxFileSizeBytes: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface CollectorStats {
  /** Capture calls that produced data written to disk (a GetImages call counts once). */
  readonly captured: number;
  readonly failed: number;
}

export interface Collector {
  readonly key: string;
  readonly resource: Resource;
  /** Completes the current capture file so the syncer can take it. */
  flush(): Promise<void>;
  /** Stops capturing, writes what is queued and completes the current file. */
  close(): Promise<void>;
  stats(): CollectorStats;
}

type QueuedResult = { timeRequestedMs: number; timeReceivedMs: number; result: CaptureResult };

const errorLogIntervalMs = 2_000;
const filterModuleDrop = 'no capture from filter module';

export function startCollector(options: CollectorOptions): Collector {
  const key = `${options.componentType}/${options.componentName}/${options.methodName}`;
  const dir = methodCaptureDir(
    options.captureDir,
    options.componentType,
    options.componentName,
    options.methodName,
  );
  const baseMetadata: CaptureFileMetadata = {
    componentType: options.componentType,
    componentName: options.componentName,
    methodName: options.methodName,
    dataType: options.captureMethod.dataType,
    methodParameters: options.additionalParams,
    fileExtension: options.captureMethod.dataType === 'tabular' ? tabularFileExtension : '',
    tags: options.tags,
  };
  const writer =
    options.captureMethod.dataType === 'tabular'
      ? createTabularCaptureWriter({
          dir,
          metadata: baseMetadata,
          maxFileSizeBytes: options.maxFileSizeBytes,
          bufferSizeBytes: options.bufferSizeBytes,
          nowMs: () => options.clock.now().getTime(),
        })
      : undefined;
  const queue = createBoundedQueue<QueuedResult>(options.queueSize);
  const stop = new AbortController();
  const extra: JsonObject = { ...options.additionalParams, fromDataManagement: true };
  const intervalMs = 1000 / options.frequencyHz;
  let captured = 0;
  let failed = 0;
  const lastLogged = new Map<string, number>();

  const logFailure = (message: string) => {
    const now = options.clock.now().getTime();
    const last = lastLogged.get(message);
    if (last !== undefined && now - last < errorLogIntervalMs) return;
    if (lastLogged.size > 100) lastLogged.clear();
    lastLogged.set(message, now);
    options.logger.error('capture failed', { collector: key, error: message });
  };

  const captureOnce = async () => {
    const timeRequestedMs = options.clock.now().getTime();
    let result: CaptureResult;
    try {
      result = await options.captureMethod.capture(options.resource, options.additionalParams, {
        extra,
        signal: stop.signal,
      });
    } catch (error) {
      if (stop.signal.aborted) return;
      const message = errorMessage(error);
      if (message.includes(filterModuleDrop)) return;
      failed++;
      logFailure(message);
      return;
    }
    await queue.push({ timeRequestedMs, timeReceivedMs: options.clock.now().getTime(), result });
  };

  const captureLoop = async () => {
    const start = options.clock.now().getTime();
    let tick = 0;
    while (!stop.signal.aborted) {
      const now = options.clock.now().getTime();
      let due = start + tick * intervalMs;
      if (now - due > intervalMs) {
        tick = Math.floor((now - start) / intervalMs) + 1;
        due = start + tick * intervalMs;
      }
      const waitMs = due - now;
      try {
        if (waitMs >= 1) await sleep(Math.floor(waitMs), undefined, { signal: stop.signal });
        else if (waitMs > 0 || tick % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
      } catch {
        return;
      }
      tick++;
      await captureOnce();
    }
  };

  const writeResult = async (queued: QueuedResult) => {
    const { result } = queued;
    if (result.kind === 'tabular') {
      await writer?.write({
        timeRequestedMs: queued.timeRequestedMs,
        timeReceivedMs: queued.timeReceivedMs,
        data: { kind: 'struct', value: result.value },
      });
    } else {
      for (const item of result.items) {
        const reading: CapturedReading = {
          timeRequestedMs: queued.timeRequestedMs,
          timeReceivedMs: queued.timeReceivedMs,
          data: { kind: 'binary', value: item.bytes },
        };
        await writeBinaryCaptureFile(
          dir,
          { ...baseMetadata, fileExtension: fileExtensionForMime(item.mimeType) },
          reading,
          options.clock.now().getTime(),
        );
      }
    }
    captured++;
  };

  const writeLoop = async () => {
    for (;;) {
      const queued = await queue.shift();
      if (!queued) return;
      try {
        await writeResult(queued);
      } catch (error) {
        failed++;
        logFailure(`writing the capture file failed: ${errorMessage(error)}`);
      }
    }
  };

  const capturing = captureLoop();
  const writing = writeLoop();

  return {
    key,
    resource: options.resource,
    flush: async () => {
      await writer?.flush();
    },
    async close() {
      stop.abort();
      await capturing;
      queue.close();
      await writing;
      await writer?.close();
    },
    stats: () => ({ captured, failed }),
  };
}
