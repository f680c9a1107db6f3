/**
 * Upload of log entries to the cloud (machine-runtime.md A4.7, "NetAppender"), in batches of at most
 * 1000 entries (`RobotService.Log`'s limit). Entries are removed only after the cloud acknowledged them.
 *
 * Online, a batch goes out every 100 ms (back to back while more is waiting). When a send fails the
 * appender is offline: the failure is reported once, new entries (and those not yet sent) go to the
 * on-disk spool, and a send of the oldest spooled batch is retried every 5 s. Once it succeeds the spool
 * drains oldest first, then the memory queue; entries dropped meanwhile (spool bound, or without a spool
 * the 20 000-entry memory bound) are reported as `Overflowed N logs while offline. …`. A batch the cloud
 * rejects as invalid (`LogBatchRejectedError`) is dropped with an error instead of retried forever.
 *
 * `close()` flushes with a deadline (default 10 s, giving up after 1.5 s without progress); whatever
 * is left is written to the spool, which the next start sends first.
 */
import { type Clock, systemClock } from '../clock.ts';
import type { LogEntry } from './log-entry.ts';
import type { LogSpool } from './log-spool.ts';
import type { LogFields, LogLevel } from './logger.ts';

/** Sends one batch; resolves once the cloud acknowledged it. */
export type SendLogBatch = (entries: readonly LogEntry[], signal: AbortSignal) => Promise<void>;

/** The cloud answered that the batch itself is invalid: retrying it cannot help. */
export class LogBatchRejectedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LogBatchRejectedError';
  }
}

export interface NetAppenderOptions {
  readonly send: SendLogBatch;
  /** Without a spool, entries beyond `maxQueueEntries` are dropped (oldest first), as the reference does. */
  readonly spool?: LogSpool;
  readonly clock?: Clock;
  /** Messages about the upload itself; the logging system writes them to a logger (and so uploads them too). */
  readonly report: (level: LogLevel, message: string, fields?: LogFields) => void;
  /** Default 1000 (RobotService.Log's limit). */
  readonly maxBatchEntries?: number;
  /** Memory queue bound; beyond it entries spill to the spool (or the oldest are dropped). Default 20 000. */
  readonly maxQueueEntries?: number;
  /** Default 100. */
  readonly flushIntervalMs?: number;
  /** Default 5000. */
  readonly retryIntervalMs?: number;
  /** Bound of one send; default 10 000. */
  readonly sendTimeoutMs?: number;
}

export type UploadStep = 'sent' | 'idle' | 'waiting' | 'failed' | 'rejected';

export interface NetAppenderStats {
  readonly queued: number;
  readonly spooled: number;
  readonly sent: number;
  readonly dropped: number;
  readonly online: boolean;
}

export interface NetAppender {
  append(entry: LogEntry): void;
  /** One step of the upload loop (tests drive it directly instead of `start()`). */
  uploadOnce(signal?: AbortSignal): Promise<UploadStep>;
  /** Runs the upload loop on timers until `close()`. */
  start(): void;
  stats(): NetAppenderStats;
  /** Stops the loop, flushes within the deadline and spools what is left. */
  close(options?: { deadlineMs?: number; signal?: AbortSignal }): Promise<void>;
}

export const maxLogBatchEntries = 1000;

export function createNetAppender(options: NetAppenderOptions): NetAppender {
  const clock = options.clock ?? systemClock;
  const spool = options.spool;
  const maxBatch = Math.min(options.maxBatchEntries ?? maxLogBatchEntries, maxLogBatchEntries);
  const maxQueue = options.maxQueueEntries ?? 20_000;
  const flushIntervalMs = options.flushIntervalMs ?? 100;
  const retryIntervalMs = options.retryIntervalMs ?? 5000;
  const sendTimeoutMs = options.sendTimeoutMs ?? 10_000;

  const queue = createEntryQueue();
  let online = true;
  let nextAttemptMs = Number.NEGATIVE_INFINITY;
  let sent = 0;
  let droppedTotal = 0;
  let droppedUnreported = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<UploadStep> | undefined;
  const stopLoop = new AbortController();

  const spill = () => {
    if (!spool || queue.length === 0) return;
    spool.append(queue.takeAll());
  };

  const takeDropped = () => {
    const fromSpool = spool?.takeDroppedCount() ?? 0;
    droppedTotal += fromSpool;
    droppedUnreported += fromSpool;
  };

  const hasPending = () => queue.length > 0 || (spool !== undefined && spool.entryCount > 0);

  const attempt = async (signal: AbortSignal | undefined): Promise<UploadStep> => {
    if (!online || (spool && spool.entryCount > 0)) spill();
    takeDropped();
    const spooled = spool?.oldest();
    // A spool segment holds one batch (the spool is opened with entriesPerSegment = maxBatchEntries).
    const batch = spooled ? spooled.entries : queue.peek(maxBatch);
    if (batch.length === 0) {
      if (spooled) spool?.remove(spooled.segment);
      return 'idle';
    }
    const timeout = AbortSignal.timeout(sendTimeoutMs);
    try {
      await options.send(batch, signal ? AbortSignal.any([signal, timeout]) : timeout);
    } catch (error) {
      if (spooled) spool?.release(spooled.segment);
      if (error instanceof LogBatchRejectedError) {
        settle(spooled?.segment, batch.length);
        droppedTotal += batch.length;
        options.report('error', 'the cloud rejected a batch of logs; it is dropped', {
          entries: batch.length,
          error: error.message,
        });
        return 'rejected';
      }
      nextAttemptMs = clock.now().getTime() + retryIntervalMs;
      if (online) {
        online = false;
        spill();
        options.report('error', `error logging to network: ${(error as Error).message}`);
      }
      return 'failed';
    }
    settle(spooled?.segment, batch.length);
    sent += batch.length;
    if (!online) online = true;
    takeDropped();
    if (droppedUnreported > 0) {
      const count = droppedUnreported;
      droppedUnreported = 0;
      options.report(
        'warn',
        `Overflowed ${count} logs while offline. Check local system logs for anything important.`,
      );
    }
    return 'sent';
  };

  const settle = (segment: number | undefined, count: number) => {
    if (segment !== undefined) spool?.remove(segment);
    else queue.drop(count);
  };

  const uploadOnce = (signal?: AbortSignal): Promise<UploadStep> => {
    if (running) return running;
    if (!online && clock.now().getTime() < nextAttemptMs) {
      spill();
      return Promise.resolve('waiting');
    }
    running = attempt(signal).finally(() => {
      running = undefined;
    });
    return running;
  };

  const schedule = (delayMs: number) => {
    if (closed) return;
    timer = setTimeout(async () => {
      const step = await uploadOnce(stopLoop.signal).catch((): UploadStep => 'failed');
      schedule(step === 'sent' && hasPending() ? 0 : flushIntervalMs);
    }, delayMs);
    timer.unref();
  };

  return {
    append(entry) {
      if (closed) {
        // Logged during or after shutdown: kept for the next start (the segment's fd closes at exit).
        spool?.append([entry]);
        return;
      }
      queue.push(entry);
      if (queue.length <= maxQueue) return;
      if (spool) {
        spill();
        return;
      }
      queue.drop(1);
      droppedTotal += 1;
      droppedUnreported += 1;
    },
    uploadOnce,
    start() {
      if (!timer && !closed) schedule(0);
    },
    stats() {
      return {
        queued: queue.length,
        spooled: spool?.entryCount ?? 0,
        sent,
        dropped: droppedTotal,
        online,
      };
    },
    async close(closeOptions = {}) {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      const deadlineMs = closeOptions.deadlineMs ?? 10_000;
      const started = performance.now();
      const deadline = AbortSignal.timeout(deadlineMs);
      const signal = closeOptions.signal ? AbortSignal.any([closeOptions.signal, deadline]) : deadline;
      const stopTimer = setTimeout(() => stopLoop.abort(), deadlineMs);
      try {
        if (running) await running.catch(() => undefined);
        let lastProgress = performance.now();
        while (
          (online || !spool) &&
          hasPending() &&
          !signal.aborted &&
          performance.now() - lastProgress < 1500
        ) {
          const step = await attempt(signal);
          if (step === 'sent') lastProgress = performance.now();
          else if (step !== 'rejected') break;
          if (performance.now() - started > deadlineMs) break;
        }
      } finally {
        clearTimeout(stopTimer);
        stopLoop.abort();
        spill();
        spool?.close();
      }
    },
  };
}

/** A FIFO of entries with O(1) removal from the front (Array#shift is linear on long arrays). */
function createEntryQueue() {
  let items: LogEntry[] = [];
  let head = 0;
  return {
    get length() {
      return items.length - head;
    },
    push(entry: LogEntry) {
      items.push(entry);
    },
    peek(count: number): LogEntry[] {
      return items.slice(head, head + count);
    },
    drop(count: number) {
      head = Math.min(items.length, head + count);
      if (head === items.length) {
        items = [];
        head = 0;
      } else if (head > 1024 && head * 2 > items.length) {
        items = items.slice(head);
        head = 0;
      }
    },
    takeAll(): LogEntry[] {
      const all = items.slice(head);
      items = [];
      head = 0;
      return all;
    },
  };
}
