import { invalidArgument } from '../errors.ts';

/** A machine log entry as uploaded (`common.v1.LogEntry`, wire-protocol §4.1). */
export interface LogEntryInput {
  host: string;
  level: string;
  /** When the machine logged it; undefined = when the cloud received it. */
  time: Date | undefined;
  loggerName: string;
  message: string;
  caller: Record<string, unknown> | undefined;
  stack: string;
  fields: Record<string, unknown>[];
}

export interface StoredLogEntry extends Omit<LogEntryInput, 'time'> {
  /** Increases with every stored entry (across parts); tails resume after it. */
  id: string;
  organizationId: string;
  partId: string;
  time: Date;
  receivedAt: Date;
}

/** Hard limits on uploaded logs, named in error messages. */
export const logLimits = {
  entriesPerBatchMax: 1_000,
  messageMaxBytes: 64 * 1024,
  stackMaxBytes: 64 * 1024,
  fieldsMaxBytes: 64 * 1024,
  shortTextMaxChars: 1_024,
  pageSizeDefault: 100,
  pageSizeMax: 1_000,
  filterMaxChars: 1_024,
  retentionDays: 30,
} as const;

/** zap levels, lowest first (RDK sends them lower-case). */
export const logLevels = ['debug', 'info', 'warn', 'error', 'dpanic', 'panic', 'fatal'] as const;
export const errorLevels: readonly string[] = ['error', 'dpanic', 'panic', 'fatal'];

export function normalizeLevel(field: string, level: string): string {
  const normalized = level.trim().toLowerCase() || 'info';
  const alias = normalized === 'warning' ? 'warn' : normalized;
  if (!(logLevels as readonly string[]).includes(alias)) {
    throw invalidArgument(field, `must be one of ${logLevels.join(', ')}`, level);
  }
  return alias;
}

function requireBytes(field: string, value: string, max: number): void {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > max) throw invalidArgument(field, `must be at most ${max} bytes`, `${bytes} bytes`);
}

/** Checks an uploaded batch against the limits; levels come back normalized. */
export function validateLogBatch(field: string, entries: readonly LogEntryInput[]): LogEntryInput[] {
  if (entries.length > logLimits.entriesPerBatchMax) {
    throw invalidArgument(
      field,
      `must contain at most ${logLimits.entriesPerBatchMax} entries per request`,
      entries.length,
    );
  }
  return entries.map((entry, index) => {
    const at = `${field}[${index}]`;
    requireBytes(`${at}.message`, entry.message, logLimits.messageMaxBytes);
    requireBytes(`${at}.stack`, entry.stack, logLimits.stackMaxBytes);
    for (const [name, value] of [
      ['host', entry.host],
      ['logger_name', entry.loggerName],
    ] as const) {
      if (value.length > logLimits.shortTextMaxChars) {
        throw invalidArgument(
          `${at}.${name}`,
          `must be at most ${logLimits.shortTextMaxChars} characters`,
          value,
        );
      }
    }
    if (entry.fields.length > 0) {
      requireBytes(`${at}.fields`, JSON.stringify(entry.fields), logLimits.fieldsMaxBytes);
    }
    if (entry.caller)
      requireBytes(`${at}.caller`, JSON.stringify(entry.caller), logLimits.shortTextMaxChars * 4);
    return { ...entry, level: normalizeLevel(`${at}.level`, entry.level) };
  });
}
