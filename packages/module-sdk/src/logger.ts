/**
 * The module's logger. Before `Ready` (and whenever the parent's `Log` call fails) lines go to
 * stdout/stderr, which the parent captures; after `Ready` every entry is one `RobotService.Log` call
 * on the parent (machine-runtime.md A3.4, appendix §2.7). The level comes from `--log-level`:
 * only `debug` means debug, anything else info (A4.5).
 */
import type { JsonValue } from './json.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  readonly name: string;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(name: string): Logger;
}

export interface LogRecord {
  readonly level: LogLevel;
  readonly loggerName: string;
  readonly message: string;
  readonly time: Date;
  readonly fields: Readonly<Record<string, JsonValue>>;
}

export type LogSink = (record: LogRecord) => void;

const order: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export function createLogger(name: string, minimum: LogLevel, sink: () => LogSink): Logger {
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (order.indexOf(level) < order.indexOf(minimum)) return;
    sink()({ level, loggerName: name, message, time: new Date(), fields: plainFields(fields) });
  };
  return {
    name,
    debug: (message, fields) => emit('debug', message, fields),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
    child: (childName) => createLogger(`${name}.${childName}`, minimum, sink),
  };
}

/** Writes one tab-separated line per record to stdout (errors to stderr). */
export const consoleSink: LogSink = (record) => {
  const fields = Object.keys(record.fields).length > 0 ? `\t${JSON.stringify(record.fields)}` : '';
  const line = `${record.time.toISOString()}\t${record.level.toUpperCase()}\t${record.loggerName}\t${record.message}${fields}\n`;
  if (record.level === 'error') process.stderr.write(line);
  else process.stdout.write(line);
};

function plainFields(fields: LogFields | undefined): Record<string, JsonValue> {
  const result: Record<string, JsonValue> = {};
  if (!fields) return result;
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) result[key] = value.message;
    else if (value === undefined) continue;
    else {
      try {
        result[key] = JSON.parse(JSON.stringify(value)) as JsonValue;
      } catch {
        result[key] = String(value);
      }
    }
  }
  return result;
}
