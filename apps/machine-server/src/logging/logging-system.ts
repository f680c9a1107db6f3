/**
 * The machine-server's logging (machine-runtime.md A4): named loggers with levels from the
 * configuration, de-duplication of noisy logs, and the outputs — stdout, the `-log-file` file (rotated),
 * and the cloud (batched upload with an on-disk spool while offline).
 *
 * Precedence (service-spec "Log precedence"): debug mode (`debug: true` in the config or `-debug`) beats
 * everything — every logger emits debug and de-duplication is off; else a resource's
 * `log_configuration` beats the `log` array, whose last matching entry wins; else info.
 *
 * Wiring (bin): `const logging = createLogging({debugFlag, logFile})`, loggers from
 * `logging.loggerFor('rdk.config')`; on every applied config `logging.setConfig(logConfigFromMachineConfig(config))`;
 * once the cloud connection exists `logging.uploadToCloud({send: createCloudLogSender({transport, partId}),
 * spoolDirectory})`; at shutdown `await logging.close(signal)` last.
 */
import { type Clock, systemClock } from '../clock.ts';
import { createLogDeduplicator, type LogDeduplicator } from './log-deduplicator.ts';
import { captureCaller, type LogEntry, normalizeLogFields } from './log-entry.ts';
import {
  compileLogLevelRules,
  type LogLevelRules,
  type LogPatternEntry,
  moduleLogLevel,
  type ResourceLogLevel,
} from './log-level-rules.ts';
import { formatLogLine } from './log-line-format.ts';
import { openLogSpool } from './log-spool.ts';
import { type LogFields, type Logger, type LogLevel, levelAtLeast } from './logger.ts';
import {
  createNetAppender,
  maxLogBatchEntries,
  type NetAppender,
  type SendLogBatch,
} from './net-appender.ts';
import { openRotatingLogFile, type RotatingLogFile } from './rotating-log-file.ts';

/** The logging part of a machine configuration. */
export interface LogConfig {
  readonly debug: boolean;
  readonly log: readonly LogPatternEntry[];
  readonly disableLogDeduplication: boolean;
  readonly resourceLevels: readonly ResourceLogLevel[];
}

export interface LoggingOptions {
  /** `-debug`. */
  readonly debugFlag?: boolean;
  /** `-log-file`: lines go to this file (rotated) instead of stdout. */
  readonly logFile?: string;
  readonly logFileMaxSizeBytes?: number;
  readonly logFileMaxBackups?: number;
  /** Also write to stdout with a log file (`VIAM_LOGFILE`); default: stdout only without a log file. */
  readonly stdout?: boolean;
  /** Default: process.stdout. */
  readonly writeStdout?: (line: string) => void;
  readonly clock?: Clock;
  /** Default 10 000 and 3 (service-spec "Limits"). */
  readonly deduplicationWindowMs?: number;
  readonly deduplicationThreshold?: number;
  /** Read the caller's file:line for every emitted entry; default true. */
  readonly captureCallers?: boolean;
  /** Flush deadline of `close()`; default 10 000. */
  readonly closeDeadlineMs?: number;
  /** Entries kept for the cloud until `uploadToCloud()` is called; default 2000. */
  readonly preCloudBufferEntries?: number;
}

export interface LoggerOptions {
  /** Module stderr and the activity logger are never de-duplicated. */
  readonly neverDeduplicate?: boolean;
  /** Emitted whatever the level (the activity logger). */
  readonly alwaysEmit?: boolean;
}

export interface CloudUploadOptions {
  readonly send: SendLogBatch;
  /** Where entries wait while the cloud is unreachable; without it they are kept in memory only. */
  readonly spoolDirectory?: string;
  readonly spoolMaxBytes?: number;
  readonly flushIntervalMs?: number;
  readonly retryIntervalMs?: number;
  readonly sendTimeoutMs?: number;
}

export interface Logging {
  /** The logger with this dotted name (the same object for the same name). */
  loggerFor(name: string, options?: LoggerOptions): Logger;
  /** Applies the logging fields of a newly applied configuration. */
  setConfig(config: LogConfig): void;
  /** True when debug mode is on (flag or config). */
  readonly debug: boolean;
  /** The level a logger currently emits from. */
  levelOf(loggerName: string): LogLevel;
  /** `--log-level` for a module (A4.5): undefined means no flag. */
  moduleLogLevel(moduleName: string, logLevel?: LogLevel): LogLevel | undefined;
  /** An entry made elsewhere (a module's log sent to the parent): de-duplicated and output, not level-filtered. */
  writeEntry(entry: LogEntry): void;
  /** Starts the cloud upload; entries logged before are sent first. */
  uploadToCloud(options: CloudUploadOptions): void;
  /** Counters of the cloud upload, undefined before `uploadToCloud`. */
  uploadStats(): ReturnType<NetAppender['stats']> | undefined;
  /** Flushes the file and the cloud upload (within the deadline; the rest is spooled). */
  close(signal?: AbortSignal): Promise<void>;
}

interface LoggerState {
  readonly name: string;
  options: LoggerOptions;
  level: LogLevel;
  readonly deduplicator: LogDeduplicator;
  logger?: Logger;
}

/** Loggers made by a logging system → that system's entry writer (for `writeLogEntry`). */
const entryWriters = new WeakMap<Logger, (entry: LogEntry) => void>();

/**
 * Outputs an entry made elsewhere — a module's log sent to the parent — under its own logger name, time
 * and caller, when `logger` comes from `createLogging` (de-duplicated, not level-filtered: the module
 * filtered by its own `--log-level`). With any other Logger it falls back to `logger[level]`.
 */
export function writeLogEntry(logger: Logger, entry: LogEntry): void {
  const write = entryWriters.get(logger);
  if (write) write(entry);
  else logger[entry.level](entry.message, { logger: entry.loggerName, ...entry.fields });
}

const moduleStdErrLogger = /^rdk\.modmanager\.[\w-]+\.StdErr$/;

/** A4.8: always emitted, never de-duplicated. */
export const activityLoggerName = 'rdk.activity';

const emptyConfig: LogConfig = { debug: false, log: [], disableLogDeduplication: false, resourceLevels: [] };

export function createLogging(options: LoggingOptions = {}): Logging {
  const clock = options.clock ?? systemClock;
  const nowMs = () => clock.now().getTime();
  const captureCallers = options.captureCallers ?? true;
  const writeStdout = options.writeStdout ?? createStdoutWriter();
  let toStdout = options.stdout ?? options.logFile === undefined;
  const preCloudLimit = options.preCloudBufferEntries ?? 2000;
  let file: RotatingLogFile | undefined;
  let fileProblem: string | undefined;
  if (options.logFile) {
    try {
      file = openRotatingLogFile({
        path: options.logFile,
        ...(options.logFileMaxSizeBytes === undefined ? {} : { maxSizeBytes: options.logFileMaxSizeBytes }),
        ...(options.logFileMaxBackups === undefined ? {} : { maxBackups: options.logFileMaxBackups }),
        nowMs,
      });
    } catch (error) {
      // A path that cannot be written is a user mistake: said clearly, and the logs go to stdout.
      fileProblem = `-log-file ${options.logFile}: ${(error as Error).message}; logging to stdout instead`;
      toStdout = true;
    }
  }

  const states = new Map<string, LoggerState>();
  let config = emptyConfig;
  let rules: LogLevelRules = compileLogLevelRules([]);
  let net: NetAppender | undefined;
  let preCloud: LogEntry[] = [];
  let closed = false;

  const isDebug = () => options.debugFlag === true || config.debug;
  const effectiveLevel = (name: string): LogLevel => (isDebug() ? 'debug' : rules.levelFor(name));

  const output = (entry: LogEntry) => {
    const line = formatLogLine(entry);
    if (toStdout) writeStdout(line);
    file?.write(line);
    if (net) net.append(entry);
    else if (!closed) {
      preCloud.push(entry);
      // Trimmed in bulk (amortized O(1)); the newest `preCloudLimit` entries are kept.
      if (preCloud.length >= 2 * preCloudLimit) preCloud = preCloud.slice(-preCloudLimit);
    }
  };

  const deduplicateAndOutput = (
    state: LoggerState,
    entry: LogEntry,
    complete?: (entry: LogEntry) => LogEntry,
  ) => {
    const skip =
      config.disableLogDeduplication ||
      state.options.neverDeduplicate ||
      state.level === 'debug' ||
      isDebug();
    if (skip) {
      output(complete ? complete(entry) : entry);
      return;
    }
    for (const admitted of state.deduplicator.admit(entry, nowMs(), complete)) output(admitted);
  };

  const stateFor = (name: string, loggerOptions?: LoggerOptions): LoggerState => {
    let state = states.get(name);
    if (!state) {
      state = {
        name,
        options:
          loggerOptions ??
          (name === activityLoggerName
            ? { neverDeduplicate: true, alwaysEmit: true }
            : // A4.4 (ms-modules): a module's stderr lines (`rdk.modmanager.<module>.StdErr`) are never de-duplicated.
              moduleStdErrLogger.test(name)
              ? { neverDeduplicate: true }
              : {}),
        level: effectiveLevel(name),
        deduplicator: createLogDeduplicator({
          ...(options.deduplicationWindowMs === undefined ? {} : { windowMs: options.deduplicationWindowMs }),
          ...(options.deduplicationThreshold === undefined
            ? {}
            : { threshold: options.deduplicationThreshold }),
        }),
      };
      states.set(name, state);
    } else if (loggerOptions !== undefined) {
      state.options = { ...state.options, ...loggerOptions };
    }
    return state;
  };

  const makeLogger = (state: LoggerState): Logger => {
    const emit = (
      level: LogLevel,
      message: string,
      fields: LogFields | undefined,
      method: (...args: never[]) => unknown,
    ) => {
      if (!state.options.alwaysEmit && !levelAtLeast(level, state.level)) return;
      const entry: LogEntry = {
        timeMs: nowMs(),
        level,
        loggerName: state.name,
        message,
        fields: normalizeLogFields(fields),
      };
      // The caller is read (still inside the logger method, so `method` is on the stack) only for
      // entries that are output: a suppressed noisy log costs no stack capture.
      const withCaller = (admitted: LogEntry): LogEntry => {
        const caller = captureCaller(method);
        return caller ? { ...admitted, caller } : admitted;
      };
      deduplicateAndOutput(state, entry, captureCallers ? withCaller : undefined);
    };
    const logger: Logger = {
      name: state.name,
      debug: (message, fields) => emit('debug', message, fields, logger.debug),
      info: (message, fields) => emit('info', message, fields, logger.info),
      warn: (message, fields) => emit('warn', message, fields, logger.warn),
      error: (message, fields) => emit('error', message, fields, logger.error),
      child: (name) => loggerFor(`${state.name}.${name}`),
    };
    return logger;
  };

  const loggerFor = (name: string, loggerOptions?: LoggerOptions): Logger => {
    const state = stateFor(name, loggerOptions);
    if (!state.logger) {
      state.logger = makeLogger(state);
      entryWriters.set(state.logger, writeEntry);
    }
    return state.logger;
  };

  const writeEntry = (entry: LogEntry) => deduplicateAndOutput(stateFor(entry.loggerName), entry);
  const root = loggerFor('rdk');
  const configLogger = loggerFor('rdk.config');
  if (fileProblem) root.error(fileProblem);

  return {
    loggerFor,
    get debug() {
      return isDebug();
    },
    levelOf: (name) => stateFor(name).level,
    setConfig(next) {
      const previous = config;
      const wasDebug = isDebug();
      const logChanged = JSON.stringify(previous.log) !== JSON.stringify(next.log);
      config = next;
      rules = compileLogLevelRules(next.log, next.resourceLevels);
      for (const state of states.values()) state.level = effectiveLevel(state.name);
      if (isDebug() !== wasDebug) root.info(`New log level: ${isDebug() ? 'debug' : 'info'}`);
      if (logChanged) {
        for (const warning of rules.warnings) configLogger.warn(warning.message, warning.fields);
        configLogger.warn(
          'The log patterns changed; they may not affect the logs of modules: use the module log_level or a resource log_configuration',
        );
      }
      if (next.disableLogDeduplication !== previous.disableLogDeduplication) {
        root.info(`Noisy log deduplication is now ${next.disableLogDeduplication ? 'disabled' : 'enabled'}`);
      }
    },
    moduleLogLevel: (moduleName, logLevel) =>
      moduleLogLevel({ moduleName, debug: isDebug(), log: config.log, ...(logLevel ? { logLevel } : {}) }),
    writeEntry,
    uploadToCloud(upload) {
      if (net || closed) return;
      const spool = upload.spoolDirectory
        ? openLogSpool({
            directory: upload.spoolDirectory,
            entriesPerSegment: maxLogBatchEntries,
            ...(upload.spoolMaxBytes === undefined ? {} : { maxBytes: upload.spoolMaxBytes }),
          })
        : undefined;
      const uploadLogger = loggerFor('rdk.networking.netappender');
      net = createNetAppender({
        send: upload.send,
        clock,
        report: (level, message, fields) => uploadLogger[level](message, fields),
        ...(spool ? { spool } : {}),
        ...(upload.flushIntervalMs === undefined ? {} : { flushIntervalMs: upload.flushIntervalMs }),
        ...(upload.retryIntervalMs === undefined ? {} : { retryIntervalMs: upload.retryIntervalMs }),
        ...(upload.sendTimeoutMs === undefined ? {} : { sendTimeoutMs: upload.sendTimeoutMs }),
      });
      for (const entry of preCloud.slice(-preCloudLimit)) net.append(entry);
      preCloud = [];
      net.start();
    },
    uploadStats: () => net?.stats(),
    async close(signal) {
      if (closed) return;
      closed = true;
      preCloud = [];
      try {
        await net?.close({ deadlineMs: options.closeDeadlineMs ?? 10_000, ...(signal ? { signal } : {}) });
      } finally {
        file?.close();
      }
    },
  };
}

/** Lines to process.stdout; once stdout fails (EPIPE: the reader went away) it is no longer written. */
function createStdoutWriter(): (line: string) => void {
  let broken = false;
  process.stdout.on('error', () => {
    broken = true;
  });
  return (line) => {
    if (!broken) process.stdout.write(`${line}\n`);
  };
}
