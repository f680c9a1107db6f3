import type { JsonObject } from '../json.ts';
import { type Logger, parseLogLevel } from '../logging/logger.ts';

/** One entry of RobotService.Log (a module's log line), transport-free. */
export interface IngestedLogEntry {
  readonly loggerName: string;
  /** `debug|info|warn|error`; zap's `dpanic|panic|fatal` count as error. */
  readonly level: string;
  readonly message: string;
  readonly time?: Date;
  readonly fields: readonly JsonObject[];
}

export type LogIngest = (entries: readonly IngestedLogEntry[]) => void;

/**
 * Re-emits module log entries through the machine's logger tree (so levels, de-duplication, the log
 * file and the cloud upload apply to them as to the machine's own logs) under the entry's logger name.
 */
export function createLogIngest(root: Logger): LogIngest {
  const loggers = new Map<string, Logger>();
  const loggerFor = (name: string): Logger => {
    let logger = loggers.get(name);
    if (!logger) {
      const relative = name.startsWith(`${root.name}.`) ? name.slice(root.name.length + 1) : name;
      logger = name === root.name || relative === '' ? root : root.child(relative);
      if (loggers.size > 1000) loggers.clear();
      loggers.set(name, logger);
    }
    return logger;
  };
  return (entries) => {
    for (const entry of entries) {
      const level = parseLogLevel(entry.level) ?? 'error';
      const fields = Object.assign({}, ...entry.fields) as JsonObject;
      if (entry.time) fields.time = entry.time.toISOString();
      loggerFor(entry.loggerName || 'module')[level](entry.message, fields);
    }
  };
}
