/**
 * `RobotService.Log` from a module (machine-runtime.md A3.4, appendix §2.7): exactly one entry per
 * call; level `debug`/`info`/`warn`/`warning`/`error` in any case (anything else is rejected). The
 * entry is output under its own logger name (the SDK names loggers `<module>.<resource>`) at its level,
 * not filtered by the parent's levels — the module already filtered by its `--log-level` (A4.5). The
 * parent's receive time is used; `log_ts` is added when the module's timestamp is more than 1 s old.
 */
import type { commonPb } from '@mcloud/protocol/machine';
import { MachineError } from '../errors.ts';
import { logEntryFromProto } from '../logging/cloud-log-sender.ts';
import { type Logger, parseLogLevel } from '../logging/logger.ts';
import { writeLogEntry } from '../logging/logging-system.ts';

const loggerNamePattern = /^[\w.:/-]{1,200}$/;

export function emitModuleLog(
  logger: Logger,
  moduleName: string | null,
  entries: readonly commonPb.LogEntry[],
  now: Date,
): void {
  if (entries.length === 0)
    throw new MachineError('InvalidArgument', 'logs: empty (exactly one entry per call)');
  if (entries.length > 1) {
    throw new MachineError(
      'InvalidArgument',
      `logs: ${entries.length} entries; batching not supported (exactly one)`,
    );
  }
  const proto = entries[0] as commonPb.LogEntry;
  if (!parseLogLevel(proto.level)) {
    throw new MachineError(
      'InvalidArgument',
      `logs[0].level: must be debug, info, warn or error (got ${JSON.stringify(proto.level)})`,
    );
  }
  const loggerName = proto.loggerName || moduleName || 'module';
  if (!loggerNamePattern.test(loggerName)) {
    throw new MachineError(
      'InvalidArgument',
      `logs[0].logger_name: must be 1-200 of [A-Za-z0-9_.:/-] (got ${JSON.stringify(loggerName)})`,
    );
  }
  const entry = logEntryFromProto(proto, now.getTime());
  const fields = { ...entry.fields };
  if (now.getTime() - entry.timeMs > 1000) fields.log_ts = new Date(entry.timeMs).toISOString();
  writeLogEntry(logger, { ...entry, loggerName, timeMs: now.getTime(), fields });
}
