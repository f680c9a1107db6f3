/**
 * Moves completed files from disk to the cloud (machine-runtime.md A5.4). A sync pass flushes the
 * collectors, walks the sync roots and uploads every ready file with at most `maxConcurrentUploads` in
 * flight. A file is deleted only after the cloud acknowledged it; a terminal failure moves it to
 * `<root>/failed/`; any other failure leaves it in place with a per-file backoff (exponential with
 * jitter), and an "offline" failure pauses all uploads for the offline delay. Closing aborts uploads in
 * flight without moving or deleting anything.
 */
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../clock.ts';
import { errorMessage, MachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import { labelsFromPath, uploadArbitraryFile } from './arbitrary-file-upload.ts';
import { type UploadTarget, uploadCaptureFile } from './capture-file-upload.ts';
import { dirMode, failedPathOf } from './capture-paths.ts';
import {
  type BackoffPolicy,
  classifyUploadFailure,
  defaultBackoffPolicy,
  retryDelayMs,
  type UploadFailureKind,
} from './retry-backoff.ts';
import { findFilesToSync, type SyncCandidate } from './sync-file-walker.ts';

export interface DataSyncerOptions {
  readonly captureDir: string;
  readonly additionalSyncPaths: readonly string[];
  readonly fileLastModifiedMs: number;
  readonly maxConcurrentUploads: number;
  /** Service tags, added to arbitrary files (capture files carry theirs in their header). */
  readonly tags: readonly string[];
  /** The cloud to upload to; undefined while there is none (not cloud managed, not connected yet). */
  readonly target: () => UploadTarget | undefined;
  /** Completes the collectors' open files before each walk. */
  readonly beforeWalk: () => Promise<void>;
  /** Which found files to upload (default all); FTDC uploads only its completed `.ftdc` files. */
  readonly accept?: (candidate: SyncCandidate) => boolean;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly backoff?: BackoffPolicy;
  readonly random?: () => number;
}

export interface SyncPassResult {
  readonly uploaded: number;
  readonly failedTerminally: number;
  readonly retryLater: number;
}

export interface SyncerStats {
  /** Files acknowledged by the cloud and deleted. */
  readonly uploadedFiles: number;
  /** Readings in those files (capture files only). */
  readonly uploadedReadings: number;
  /** Arbitrary files uploaded. */
  readonly uploadedArbitraryFiles: number;
  /** Files moved to `failed/`. */
  readonly failedFiles: number;
  /** Failed attempts that will be retried. */
  readonly retries: number;
}

export interface ScheduleOptions {
  readonly intervalMs: number;
  /** Checked before each scheduled pass (selective sync); false skips the pass. */
  readonly shouldSync: (signal: AbortSignal) => Promise<boolean>;
}

export interface DataSyncer {
  /** One pass now (the manual Sync RPC): ignores backoff; fails when there is no cloud connection. */
  syncNow(signal?: AbortSignal): Promise<SyncPassResult>;
  /** Starts passes every `intervalMs` until close. */
  startSchedule(schedule: ScheduleOptions): void;
  /** Whether `filePath` is being uploaded right now (the deletion policy leaves such files alone). */
  isUploading(filePath: string): boolean;
  stats(): SyncerStats;
  close(): Promise<void>;
}

interface RetryState {
  failures: number;
  notBeforeMs: number;
}

const notConnectedLogIntervalMs = 60_000;

export function createDataSyncer(options: DataSyncerOptions): DataSyncer {
  const backoff = options.backoff ?? defaultBackoffPolicy;
  const random = options.random ?? Math.random;
  const stop = new AbortController();
  const inFlight = new Set<string>();
  const retries = new Map<string, RetryState>();
  let offlineUntilMs = 0;
  let lastSkipLogMs = Number.NEGATIVE_INFINITY;
  let scheduled: Promise<void> | undefined;
  const stats = {
    uploadedFiles: 0,
    uploadedReadings: 0,
    uploadedArbitraryFiles: 0,
    failedFiles: 0,
    retries: 0,
  };

  const logSkip = (message: string, fields?: Record<string, unknown>) => {
    const now = options.clock.now().getTime();
    if (now - lastSkipLogMs < notConnectedLogIntervalMs) return;
    lastSkipLogMs = now;
    options.logger.info(message, fields);
  };

  /** Uploads one file and settles it: 'done' (deleted, moved or vanished) or the failure kind. */
  const syncFile = async (target: UploadTarget, candidate: SyncCandidate, signal: AbortSignal) => {
    inFlight.add(candidate.path);
    try {
      if (candidate.kind === 'capture') {
        const outcome = await uploadCaptureFile(target, candidate.path, signal);
        if (outcome.kind === 'uploaded') stats.uploadedReadings += outcome.readings;
      } else {
        await uploadArbitraryFile(
          target,
          candidate.path,
          labelsFromPath(candidate.root, candidate.path, options.tags),
          signal,
        );
        stats.uploadedArbitraryFiles++;
      }
      await rm(candidate.path, { force: true });
      retries.delete(candidate.path);
      stats.uploadedFiles++;
      return 'done' as const;
    } catch (error) {
      if (signal.aborted) throw error;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        // Deleted meanwhile (disk-full policy, user): nothing left to do.
        retries.delete(candidate.path);
        return 'done' as const;
      }
      return settleFailure(candidate, error);
    } finally {
      inFlight.delete(candidate.path);
    }
  };

  const settleFailure = async (candidate: SyncCandidate, error: unknown): Promise<UploadFailureKind> => {
    const kind = classifyUploadFailure(error);
    if (kind === 'terminal') {
      retries.delete(candidate.path);
      const destination = failedPathOf(candidate.root, candidate.path);
      try {
        await mkdir(path.dirname(destination), { recursive: true, mode: dirMode });
        await rename(candidate.path, destination);
        stats.failedFiles++;
        options.logger.warn('upload failed permanently; file moved aside', {
          file: candidate.path,
          movedTo: destination,
          error: errorMessage(error),
        });
      } catch (moveError) {
        options.logger.error('could not move a failed file aside', {
          file: candidate.path,
          error: errorMessage(moveError),
        });
      }
      return kind;
    }
    const state = retries.get(candidate.path) ?? { failures: 0, notBeforeMs: 0 };
    state.failures++;
    const delayMs = retryDelayMs(kind, state.failures, backoff, random);
    state.notBeforeMs = options.clock.now().getTime() + delayMs;
    retries.set(candidate.path, state);
    stats.retries++;
    if (kind === 'offline') offlineUntilMs = Math.max(offlineUntilMs, state.notBeforeMs);
    options.logger.debug('upload failed; will retry', {
      file: candidate.path,
      kind,
      failures: state.failures,
      retryInMs: delayMs,
      error: errorMessage(error),
    });
    return kind;
  };

  const pass = async (
    target: UploadTarget,
    manual: boolean,
    signal: AbortSignal,
  ): Promise<SyncPassResult> => {
    await options.beforeWalk();
    const now = options.clock.now().getTime();
    const candidates = (
      await findFilesToSync({
        roots: [options.captureDir, ...options.additionalSyncPaths],
        fileLastModifiedMs: options.fileLastModifiedMs,
        nowMs: now,
        signal,
      })
    ).filter((candidate) => {
      if (inFlight.has(candidate.path) || options.accept?.(candidate) === false) return false;
      return manual || (retries.get(candidate.path)?.notBeforeMs ?? 0) <= now;
    });
    const result = { uploaded: 0, failedTerminally: 0, retryLater: 0 };
    let offline = false;
    let next = 0;
    const worker = async () => {
      while (next < candidates.length && !offline && !signal.aborted) {
        const candidate = candidates[next++] as SyncCandidate;
        const outcome = await syncFile(target, candidate, signal);
        if (outcome === 'done') result.uploaded++;
        else if (outcome === 'terminal') result.failedTerminally++;
        else {
          result.retryLater++;
          // The cloud is unreachable: the rest of this pass would fail the same way.
          if (outcome === 'offline' && !manual) offline = true;
        }
      }
    };
    const workers = Math.max(1, Math.min(options.maxConcurrentUploads, candidates.length));
    await Promise.all(Array.from({ length: workers }, worker));
    return result;
  };

  const scheduledPass = async (schedule: ScheduleOptions) => {
    const target = options.target();
    if (!target) {
      logSkip('datamanager cannot sync: not connected to the cloud (or the machine is not cloud managed)');
      return;
    }
    if (options.clock.now().getTime() < offlineUntilMs) {
      logSkip('not syncing to the cloud: it was unreachable; retrying later', {
        retryInMs: Math.round(offlineUntilMs - options.clock.now().getTime()),
      });
      return;
    }
    if (!(await schedule.shouldSync(stop.signal))) return;
    await pass(target, false, stop.signal);
  };

  return {
    async syncNow(signal) {
      const target = options.target();
      if (!target) throw new MachineError('FailedPrecondition', 'not connected to the cloud');
      const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
      return pass(target, true, combined);
    },
    startSchedule(schedule) {
      if (scheduled) throw new Error('the sync schedule is already running');
      scheduled = (async () => {
        while (!stop.signal.aborted) {
          try {
            await sleep(schedule.intervalMs, undefined, { signal: stop.signal });
          } catch {
            return;
          }
          try {
            await scheduledPass(schedule);
          } catch (error) {
            if (!stop.signal.aborted)
              options.logger.error('sync pass failed', { error: errorMessage(error) });
          }
        }
      })();
    },
    isUploading: (filePath) => inFlight.has(filePath),
    stats: () => ({ ...stats }),
    async close() {
      stop.abort();
      await scheduled;
      // Uploads still in flight were aborted with `stop`; wait until they let go of their files.
      while (inFlight.size > 0) await sleep(5);
    },
  };
}
