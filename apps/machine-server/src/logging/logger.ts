/**
 * The logger every part of the machine-server writes to. Only this interface and a trivial console
 * implementation live here; levels by pattern, de-duplication, files and cloud upload are ms-logging's
 * (src/logging/*), which provides a richer implementation of the same interface.
 *
 * Names are dotted (`rdk`, `rdk.config`, `rdk.resource_manager.rdk:component:sensor/s1`); `child('x')`
 * returns the logger named `<name>.x`. `fields` are structured key/values; never put secrets in them.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export const logLevels: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  readonly name: string;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(name: string): Logger;
}

/** Parses `debug|info|warn|warning|error` in any case (e.g. `Debug`); undefined for anything else. */
export function parseLogLevel(value: unknown): LogLevel | undefined {
  if (typeof value !== 'string') return undefined;
  const lower = value.toLowerCase();
  if (lower === 'warning') return 'warn';
  return (logLevels as readonly string[]).includes(lower) ? (lower as LogLevel) : undefined;
}

export function levelAtLeast(level: LogLevel, minimum: LogLevel): boolean {
  return logLevels.indexOf(level) >= logLevels.indexOf(minimum);
}

export interface ConsoleLoggerOptions {
  level?: LogLevel;
  /** Where lines go; default process.stdout. One JSON-free text line per entry. */
  write?: (line: string) => void;
}

/** A minimal logger: `<ISO time>\t<LEVEL>\t<name>\t<message>\t<fields JSON>` to stdout. */
export function createConsoleLogger(name = 'rdk', options: ConsoleLoggerOptions = {}): Logger {
  const minimum = options.level ?? 'info';
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (!levelAtLeast(level, minimum)) return;
    const extra = fields && Object.keys(fields).length > 0 ? `\t${safeJson(fields)}` : '';
    write(`${new Date().toISOString()}\t${level.toUpperCase()}\t${name}\t${message}${extra}`);
  };
  return {
    name,
    debug: (message, fields) => emit('debug', message, fields),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
    child: (childName) => createConsoleLogger(`${name}.${childName}`, options),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export function createSilentLogger(name = 'rdk'): Logger {
  const ignore = () => {};
  return {
    name,
    debug: ignore,
    info: ignore,
    warn: ignore,
    error: ignore,
    child: (childName) => createSilentLogger(`${name}.${childName}`),
  };
}

function safeJson(fields: LogFields): string {
  try {
    return JSON.stringify(fields, (_key, value) => (value instanceof Error ? value.message : value));
  } catch {
    return '{}';
  }
}
