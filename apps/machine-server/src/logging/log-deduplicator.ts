/**
 * De-duplication of noisy logs (machine-runtime.md A4.4, with the service spec's numbers: a log is
 * noisy after 3 identical outputs in 10 seconds). One deduplicator per named logger.
 *
 * - The key is the message plus, for each field in order, ` <key> <value>`; the fields `grpc.time_ms`,
 *   `grpc.start_time` and `log_ts` are ignored; level and caller are not part of the key.
 * - The window is fixed, not sliding, and rolls over lazily on the first write after it ended: then,
 *   for every key written more than 3 times, the last entry is output once more as
 *   `Message logged <N> times in past 10s: <message>`, and the counts start again.
 * - The 4th identical write in a window outputs `Message logged 3 times; suppressing for rest of window
 *   (10s): <message>`; it and every later one in the window are dropped.
 */
import type { LogEntry } from './log-entry.ts';

export interface LogDeduplicatorOptions {
  /** Default 10 000. */
  readonly windowMs?: number;
  /** Identical outputs allowed per window; default 3. */
  readonly threshold?: number;
}

export interface LogDeduplicator {
  /**
   * What to output for `entry` written at `nowMs`: summaries of the last window first, then the entry
   * unless it is suppressed. `complete` finishes an entry that will be output (e.g. reads its caller,
   * which is too costly for entries that are dropped).
   */
  admit(entry: LogEntry, nowMs: number, complete?: (entry: LogEntry) => LogEntry): LogEntry[];
}

export const defaultDeduplicationWindowMs = 10_000;
export const defaultDeduplicationThreshold = 3;

const ignoredFields = new Set(['grpc.time_ms', 'grpc.start_time', 'log_ts']);

export function createLogDeduplicator(options: LogDeduplicatorOptions = {}): LogDeduplicator {
  const windowMs = options.windowMs ?? defaultDeduplicationWindowMs;
  const threshold = options.threshold ?? defaultDeduplicationThreshold;
  const windowText = formatGoDuration(windowMs);
  let windowStartMs = Number.NEGATIVE_INFINITY;
  const counts = new Map<string, number>();
  const lastEntries = new Map<string, LogEntry>();

  return {
    admit(incoming, nowMs, complete) {
      const output: LogEntry[] = [];
      if (nowMs - windowStartMs > windowMs) {
        for (const [key, count] of counts) {
          const last = lastEntries.get(key);
          if (count > threshold && last) {
            output.push({
              ...last,
              timeMs: nowMs,
              message: `Message logged ${count} times in past ${windowText}: ${last.message}`,
            });
          }
        }
        counts.clear();
        lastEntries.clear();
        windowStartMs = nowMs;
      }
      const key = deduplicationKey(incoming);
      const count = (counts.get(key) ?? 0) + 1;
      counts.set(key, count);
      let entry = incoming;
      if (count <= threshold + 1) {
        if (complete) entry = complete(incoming);
      } else {
        // Dropped: keep the caller of the last output one for the summary line.
        const caller = lastEntries.get(key)?.caller;
        if (caller && !entry.caller) entry = { ...entry, caller };
      }
      lastEntries.set(key, entry);
      if (count <= threshold) {
        output.push(entry);
      } else if (count === threshold + 1) {
        output.push({
          ...entry,
          message: `Message logged ${threshold} times; suppressing for rest of window (${windowText}): ${entry.message}`,
        });
      }
      return output;
    },
  };
}

export function deduplicationKey(entry: LogEntry): string {
  let key = entry.message;
  for (const [name, value] of Object.entries(entry.fields)) {
    if (ignoredFields.has(name)) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    key += ` ${name} ${text === '' ? 'undefined' : text}`;
  }
  return key;
}

/** Go's time.Duration text for whole seconds and above: `10s`, `1m0s`, `1h0m0s`; below a second `500ms`. */
export function formatGoDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const totalSeconds = ms / 1000;
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = Number((totalSeconds % 60).toFixed(3));
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
