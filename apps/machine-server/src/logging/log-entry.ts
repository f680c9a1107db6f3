/**
 * One log record as it travels through the logging pipeline (level filter → de-duplication → console,
 * file and cloud outputs). Fields are normalized to JSON once, when the entry is made, so every output
 * (and the on-disk spool) sees the same values.
 */
import type { JsonValue } from '../json.ts';
import type { LogFields, LogLevel } from './logger.ts';

/** Where a log call was made; `file` is the full path, `line` 1-based. */
export interface LogCaller {
  readonly file: string;
  readonly line: number;
  readonly function: string;
}

export interface LogEntry {
  readonly timeMs: number;
  readonly level: LogLevel;
  readonly loggerName: string;
  readonly message: string;
  readonly caller?: LogCaller;
  readonly stack?: string;
  /** In the order given; values are JSON (errors as their message, bigints and non-finite numbers as strings). */
  readonly fields: Readonly<Record<string, JsonValue>>;
}

/** JSON-safe copies of structured fields; `undefined` and functions are left out. */
export function normalizeLogFields(fields: LogFields | undefined): Record<string, JsonValue> {
  const normalized: Record<string, JsonValue> = {};
  if (!fields) return normalized;
  for (const [key, value] of Object.entries(fields)) {
    const json = toJsonValue(value);
    if (json !== undefined) normalized[key] = json;
  }
  return normalized;
}

function toJsonValue(value: unknown): JsonValue | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
    case 'symbol':
      return value.toString();
    case 'undefined':
    case 'function':
      return undefined;
  }
  if (value === null) return null;
  if (value instanceof Error) return value.message;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  try {
    const text = JSON.stringify(value, (_key, inner) => {
      if (inner instanceof Error) return inner.message;
      if (typeof inner === 'bigint') return inner.toString();
      return inner;
    });
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  } catch {
    return String(value);
  }
}

const framePattern = /^\s*at (?:(.*?) \()?(.*):(\d+):\d+\)?$/;

/**
 * The caller of `above` (the logger method the application called), read from a one-frame V8 stack.
 * Undefined when the frame cannot be read (native code, eval).
 */
export function captureCaller(above: (...args: never[]) => unknown): LogCaller | undefined {
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  try {
    Error.captureStackTrace(holder, above);
  } finally {
    Error.stackTraceLimit = limit;
  }
  const frame = holder.stack?.split('\n')[1];
  const match = frame ? framePattern.exec(frame) : null;
  if (!match) return undefined;
  const location = match[2] ?? '';
  return {
    file: location.startsWith('file://') ? decodeURIComponent(location.slice('file://'.length)) : location,
    line: Number(match[3]),
    function: match[1] ?? '',
  };
}

/** `dir/file.ts:12`: the last two path elements and the line, as the console format shows callers. */
export function trimmedCaller(caller: LogCaller): string {
  const parts = caller.file.split(/[\\/]/);
  return `${parts.slice(-2).join('/')}:${caller.line}`;
}
