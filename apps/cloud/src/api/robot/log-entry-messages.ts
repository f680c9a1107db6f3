import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { commonPb } from '@mcloud/protocol';
import type { LogEntryInput, StoredLogEntry } from '../../domain/logs/log-entry.ts';

/** `common.v1.LogEntry` ⇄ domain log entries. */
export function logEntryFromProto(entry: commonPb.LogEntry): LogEntryInput {
  return {
    host: entry.host,
    level: entry.level,
    time: entry.time ? timestampDate(entry.time) : undefined,
    loggerName: entry.loggerName,
    message: entry.message,
    caller: entry.caller as Record<string, unknown> | undefined,
    stack: entry.stack,
    fields: entry.fields as Record<string, unknown>[],
  };
}

export function logEntryToProto(entry: StoredLogEntry): MessageInitShape<typeof commonPb.LogEntrySchema> {
  return {
    host: entry.host,
    level: entry.level,
    time: timestampFromDate(entry.time),
    loggerName: entry.loggerName,
    message: entry.message,
    ...(entry.caller && { caller: entry.caller as JsonObject }),
    stack: entry.stack,
    fields: entry.fields as JsonObject[],
  };
}
