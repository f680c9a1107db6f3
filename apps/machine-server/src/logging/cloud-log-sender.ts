/**
 * The transport side of log upload: log entries ⇄ `viam.common.v1.LogEntry` and the
 * `viam.app.v1.RobotService/Log` call (wire-protocol.md §4.1). Entries carry `host` (this computer's
 * name), the lower-case level, `caller` as `{Defined, File, Line, Function}` and each field as a zap
 * field `{Key, Type, Integer, String, Interface}` (float64 values as strings, booleans as 0/1 integers,
 * objects in `Interface`), as the reference writes them.
 */

import { hostname } from 'node:os';
import { create, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { commonPb, robotPb } from '@mcloud/protocol/machine';
import type { LogCaller, LogEntry } from './log-entry.ts';
import { parseLogLevel } from './logger.ts';
import { LogBatchRejectedError, type SendLogBatch } from './net-appender.ts';

/**
 * What the cloud accepts per entry (a larger one makes it reject the whole batch): longer texts are cut
 * here, and fields whose JSON is too large are replaced by one `fields_truncated` field.
 */
export const cloudLogEntryLimits = {
  messageMaxBytes: 64 * 1024,
  stackMaxBytes: 64 * 1024,
  fieldsMaxBytes: 64 * 1024,
  shortTextMaxChars: 1024,
} as const;

/** zapcore.FieldType values used on the wire. */
const zapType = { bool: 4, float64: 9, int64: 11, string: 15, reflect: 23 } as const;

export interface CloudLogSenderOptions {
  readonly transport: Transport;
  readonly partId: string;
  /** Default: os.hostname(). */
  readonly host?: string;
}

/** Sends batches with `RobotService.Log{id: partId, logs}`; InvalidArgument rejects the batch for good. */
export function createCloudLogSender(options: CloudLogSenderOptions): SendLogBatch {
  const client = createClient(robotPb.RobotService, options.transport);
  const host = options.host ?? hostname();
  return async (entries, signal) => {
    try {
      await client.log(
        { id: options.partId, logs: entries.map((entry) => logEntryToProto(entry, host)) },
        { signal },
      );
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.InvalidArgument) {
        throw new LogBatchRejectedError(error.rawMessage, { cause: error });
      }
      throw error;
    }
  };
}

export function logEntryToProto(entry: LogEntry, host: string): commonPb.LogEntry {
  const limits = cloudLogEntryLimits;
  let fields = Object.entries(entry.fields).map(([key, value]) => fieldToStruct(key, value));
  const fieldsBytes = Buffer.byteLength(JSON.stringify(fields));
  if (fieldsBytes > limits.fieldsMaxBytes) {
    fields = [
      fieldToStruct('fields_truncated', `${fieldsBytes} bytes of fields exceed ${limits.fieldsMaxBytes}`),
    ];
  }
  return create(commonPb.LogEntrySchema, {
    host: host.slice(0, limits.shortTextMaxChars),
    level: entry.level,
    time: timestampFromMs(entry.timeMs),
    loggerName: entry.loggerName.slice(0, limits.shortTextMaxChars),
    message: truncateUtf8(entry.message, limits.messageMaxBytes),
    caller: callerToStruct(entry.caller),
    stack: truncateUtf8(entry.stack ?? '', limits.stackMaxBytes),
    fields,
  });
}

/** `text` cut to at most `maxBytes` UTF-8 bytes (on a character boundary), marked when cut. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const marker = ' …(truncated)';
  const budget = maxBytes - Buffer.byteLength(marker);
  let cut = Buffer.from(text).subarray(0, budget).toString('utf8');
  // A multi-byte character split at the edge decodes as U+FFFD: drop it.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return `${cut}${marker}`;
}

/**
 * A log entry a module sent to the parent (or any client wrote) as our entry; unknown levels count as
 * info. `receivedMs` stands in for a missing time.
 */
export function logEntryFromProto(proto: commonPb.LogEntry, receivedMs: number): LogEntry {
  const fields: Record<string, JsonValue> = {};
  for (const field of proto.fields) {
    const key = typeof field.Key === 'string' ? field.Key : '';
    if (key !== '') fields[key] = fieldValue(field);
  }
  const caller = callerFromStruct(proto.caller);
  return {
    timeMs: proto.time ? timestampMs(proto.time) : receivedMs,
    level: parseLogLevel(proto.level) ?? (/panic|fatal/i.test(proto.level) ? 'error' : 'info'),
    loggerName: proto.loggerName,
    message: proto.message,
    fields,
    ...(caller ? { caller } : {}),
    ...(proto.stack ? { stack: proto.stack } : {}),
  };
}

function callerToStruct(caller: LogCaller | undefined): JsonObject {
  if (!caller) return { Defined: false, File: '', Line: 0, Function: '' };
  return { Defined: true, File: caller.file, Line: caller.line, Function: caller.function };
}

function callerFromStruct(struct: JsonObject | undefined): LogCaller | undefined {
  if (!struct || struct.Defined === false || typeof struct.File !== 'string' || struct.File === '')
    return undefined;
  return {
    file: struct.File,
    line: typeof struct.Line === 'number' ? struct.Line : 0,
    function: typeof struct.Function === 'string' ? struct.Function : '',
  };
}

function fieldToStruct(key: string, value: JsonValue): JsonObject {
  const field = { Key: key, Type: zapType.reflect, Integer: 0, String: '', Interface: null as JsonValue };
  if (typeof value === 'string') return { ...field, Type: zapType.string, String: value };
  if (typeof value === 'boolean') return { ...field, Type: zapType.bool, Integer: value ? 1 : 0 };
  if (typeof value === 'number') {
    return Number.isSafeInteger(value)
      ? { ...field, Type: zapType.int64, Integer: value }
      : { ...field, Type: zapType.float64, String: String(value) };
  }
  return { ...field, Interface: value };
}

function fieldValue(field: JsonObject): JsonValue {
  const type = field.Type;
  if (type === zapType.bool) return field.Integer === 1;
  if (type === zapType.float64 && typeof field.String === 'string') return Number(field.String);
  if (field.Interface !== undefined && field.Interface !== null) return field.Interface;
  if (typeof field.String === 'string' && field.String !== '') return field.String;
  if (typeof field.Integer === 'number') return field.Integer;
  return null;
}
