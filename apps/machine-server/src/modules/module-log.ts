/**
 * `RobotService.Log` from a module (machine-runtime.md A3.4, appendix §2.7): exactly one entry per
 * call; level `debug`/`info`/`warn`/`warning`/`error` in any case (anything else is rejected). The
 * entry is re-emitted by the parent's logger `rdk.modmanager.<logger_name>` (the SDK names loggers
 * `<module>.<resource>`) at its level; fields come back as key/values, `log_ts` is added when the
 * module's timestamp is more than 1 s old. The module decides what to send (its `--log-level`).
 */
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { commonPb } from '@mcloud/protocol';
import { MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import type { Logger } from '../logging/logger.ts';
import { parseLogLevel } from '../logging/logger.ts';

const loggerNamePattern = /^[\w.:/-]{1,200}$/;

export function emitModuleLog(
  modulesLogger: Logger,
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
  const entry = entries[0] as commonPb.LogEntry;
  const level = parseLogLevel(entry.level);
  if (!level) {
    throw new MachineError(
      'InvalidArgument',
      `logs[0].level: must be debug, info, warn or error (got ${JSON.stringify(entry.level)})`,
    );
  }
  const name = entry.loggerName || moduleName || 'module';
  if (!loggerNamePattern.test(name)) {
    throw new MachineError(
      'InvalidArgument',
      `logs[0].logger_name: must be 1-200 of [A-Za-z0-9_.:/-] (got ${JSON.stringify(name)})`,
    );
  }
  const fields: Record<string, unknown> = {};
  for (const field of entry.fields) Object.assign(fields, fieldFromStruct(field));
  if (entry.caller?.Defined === true) fields.caller = `${entry.caller.File}:${entry.caller.Line}`;
  if (entry.time) {
    const sent = timestampDate(entry.time);
    if (now.getTime() - sent.getTime() > 1000) fields.log_ts = sent.toISOString();
  }
  const hasFields = Object.keys(fields).length > 0;
  modulesLogger.child(name)[level](entry.message, hasFields ? fields : undefined);
}

/** A zap field as JSON (`{Key, Type, Integer, String, Interface}`) or a plain object of key/values. */
function fieldFromStruct(field: JsonObject): Record<string, unknown> {
  if (typeof field.Key !== 'string') return field;
  const value =
    field.Interface !== undefined && field.Interface !== null
      ? field.Interface
      : typeof field.String === 'string' && field.String !== ''
        ? field.String
        : typeof field.Integer === 'number' && field.Integer !== 0
          ? field.Integer
          : null;
  return { [field.Key]: value };
}
