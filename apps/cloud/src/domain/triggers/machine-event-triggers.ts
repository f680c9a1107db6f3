import { errorLevels, type StoredLogEntry } from '../logs/log-entry.ts';
import type { MachineEventObserver } from '../machines/machine-events.ts';
import type { Clock } from '../shared/clock.ts';
import { fireTrigger } from './fire-trigger.ts';
import type { PartTriggersCache } from './part-triggers.ts';
import type { TriggerLogLevel } from './trigger-config.ts';
import type { TriggerLogEntry } from './trigger-delivery.ts';

/**
 * Loggers of the cloud's own trigger failure lines (`app.trigger.<trigger-name>`). Never matched by a
 * logs trigger: an error-level trigger would otherwise feed on its own delivery failures.
 */
export const triggerLoggerPrefix = 'app.trigger.';

/**
 * part_online / part_offline / conditional_logs_ingested: a `MachineEventObserver`, so it runs inside
 * the transaction of the status change or the log batch (CloudDeps.machineEventObservers).
 */
export function createMachineEventTriggers(cache: PartTriggersCache, clock: Clock): MachineEventObserver {
  return async (tx, event) => {
    const triggers = await cache.forPart(tx, event);
    if (event.kind === 'part-logs') {
      for (const trigger of triggers.conditional_logs_ingested) {
        const matching = event.entries.filter((entry) => {
          if (entry.loggerName.startsWith(triggerLoggerPrefix)) return false;
          const level = triggerLevelOf(entry.level);
          return level !== undefined && trigger.logLevels.includes(level);
        });
        if (matching.length === 0) continue;
        for (const entries of logEntryChunks(matching.map(triggerLogEntryOf))) {
          await fireTrigger(
            tx,
            event,
            trigger,
            { kind: 'logs', entries },
            (matching[0] as StoredLogEntry).receivedAt,
            new Date(clock.nowMs()),
          );
        }
      }
      return;
    }
    const list = event.kind === 'part-online' ? triggers.part_online : triggers.part_offline;
    for (const trigger of list) {
      await fireTrigger(
        tx,
        event,
        trigger,
        { kind: 'part-status', at: event.at.toISOString() },
        event.at,
        new Date(clock.nowMs()),
      );
    }
  };
}

/** One notification carries at most this many log entries, or this many bytes of them (JSON). */
export const logEntriesPerNotificationMax = 100;
export const logBytesPerNotificationMax = 1024 * 1024;

/**
 * The matching entries of one batch, in notifications of bounded size (a batch may hold 1,000 entries
 * of up to 64 KiB message, stack and fields each). Usually one chunk.
 */
export function logEntryChunks(entries: readonly TriggerLogEntry[]): TriggerLogEntry[][] {
  const chunks: TriggerLogEntry[][] = [];
  let current: TriggerLogEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = Buffer.byteLength(JSON.stringify(entry));
    if (
      current.length > 0 &&
      (current.length >= logEntriesPerNotificationMax || bytes + size > logBytesPerNotificationMax)
    ) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * The trigger level of a stored (normalized, lower-case zap) level: `error` also covers dpanic, panic
 * and fatal; `warn` and `info` are themselves; debug matches nothing.
 */
export function triggerLevelOf(level: string): TriggerLogLevel | undefined {
  const normalized = level.toLowerCase();
  if (errorLevels.includes(normalized)) return 'error';
  if (normalized === 'warn' || normalized === 'warning') return 'warn';
  if (normalized === 'info') return 'info';
  return undefined;
}

function triggerLogEntryOf(entry: StoredLogEntry): TriggerLogEntry {
  const result: TriggerLogEntry = {
    time: entry.time.toISOString(),
    level: entry.level,
    loggerName: entry.loggerName,
    message: entry.message,
  };
  if (entry.caller) result.caller = entry.caller;
  if (entry.stack) result.stack = entry.stack;
  if (entry.fields.length > 0) result.fields = entry.fields;
  return result;
}
