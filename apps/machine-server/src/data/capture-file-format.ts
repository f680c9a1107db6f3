/**
 * The capture file format (machine-runtime.md A5.3): size-delimited protobuf (varint length, then the
 * message), first one `viam.app.datasync.v1.DataCaptureMetadata`, then zero or more `SensorData`.
 * This file is the only place that knows the bytes; the rest of the data manager works with
 * `CaptureFileMetadata` and `CapturedReading`.
 */
import { create, fromBinary, fromJson, toJson } from '@bufbuild/protobuf';
import { sizeDelimitedEncode } from '@bufbuild/protobuf/wire';
import {
  type Any,
  anyPack,
  anyUnpack,
  type Timestamp,
  timestampFromMs,
  ValueSchema,
} from '@bufbuild/protobuf/wkt';
import { dataSyncPb } from '@mcloud/protocol/machine';
import { MachineError } from '../errors.ts';
import type { JsonObject, JsonValue } from '../json.ts';
import { encodeTabularReadingDelimited } from './sensor-data-encoding.ts';

export type CaptureDataType = 'tabular' | 'binary';

/** The header of a capture file (DataCaptureMetadata). */
export interface CaptureFileMetadata {
  /** API triple, e.g. `rdk:component:sensor`. */
  readonly componentType: string;
  readonly componentName: string;
  readonly methodName: string;
  readonly dataType: CaptureDataType;
  /** `additional_params`, stored as `map<string, Any(google.protobuf.Value)>`. */
  readonly methodParameters: JsonObject;
  /** With the leading dot: `.dat`, `.jpeg`, `.png`, `.pcd`. */
  readonly fileExtension: string;
  readonly tags: readonly string[];
}

export type CapturedData =
  | { readonly kind: 'struct'; readonly value: JsonObject }
  | { readonly kind: 'binary'; readonly value: Uint8Array };

/** One SensorData: when the capture was requested and received (epoch ms, sub-ms allowed), and its data. */
export interface CapturedReading {
  readonly timeRequestedMs: number;
  readonly timeReceivedMs: number;
  readonly data: CapturedData;
}

/** A capture file that cannot be read as this format: terminal for the syncer (moved to `failed/`). */
export class CaptureFileFormatError extends MachineError {
  constructor(filePath: string, problem: string, options?: { cause?: unknown }) {
    super('InvalidArgument', `capture file ${filePath}: ${problem}`, options);
    this.name = 'CaptureFileFormatError';
  }
}

export function isCaptureFileFormatError(error: unknown): error is CaptureFileFormatError {
  return error instanceof CaptureFileFormatError;
}

const dataTypeToProto: Record<CaptureDataType, dataSyncPb.DataType> = {
  tabular: dataSyncPb.DataType.TABULAR_SENSOR,
  binary: dataSyncPb.DataType.BINARY_SENSOR,
};

export function methodParametersToProto(parameters: JsonObject): { [key: string]: Any } {
  const result: { [key: string]: Any } = {};
  for (const [key, value] of Object.entries(parameters))
    result[key] = anyPack(ValueSchema, fromJson(ValueSchema, value));
  return result;
}

/** Any(Value) → plain JSON; other packed types cannot come from this format. */
function methodParametersFromProto(parameters: { [key: string]: Any }, filePath: string): JsonObject {
  const result: JsonObject = {};
  for (const [key, any] of Object.entries(parameters)) {
    const value = anyUnpack(any, ValueSchema);
    if (!value) {
      throw new CaptureFileFormatError(
        filePath,
        `method parameter ${JSON.stringify(key)} is not a google.protobuf.Value`,
      );
    }
    result[key] = toJson(ValueSchema, value) as JsonValue;
  }
  return result;
}

export function captureMetadataToProto(metadata: CaptureFileMetadata): dataSyncPb.DataCaptureMetadata {
  return create(dataSyncPb.DataCaptureMetadataSchema, {
    componentType: metadata.componentType,
    componentName: metadata.componentName,
    methodName: metadata.methodName,
    type: dataTypeToProto[metadata.dataType],
    methodParameters: methodParametersToProto(metadata.methodParameters),
    fileExtension: metadata.fileExtension,
    tags: [...metadata.tags],
  });
}

export function sensorMetadataToProto(reading: Pick<CapturedReading, 'timeRequestedMs' | 'timeReceivedMs'>) {
  return create(dataSyncPb.SensorMetadataSchema, {
    timeRequested: timestampOfMs(reading.timeRequestedMs),
    timeReceived: timestampOfMs(reading.timeReceivedMs),
  });
}

export function sensorDataToProto(reading: CapturedReading): dataSyncPb.SensorData {
  return create(dataSyncPb.SensorDataSchema, {
    metadata: sensorMetadataToProto(reading),
    data:
      reading.data.kind === 'struct'
        ? { case: 'struct', value: reading.data.value }
        : { case: 'binary', value: reading.data.value },
  });
}

/** Timestamp with microsecond precision from fractional epoch milliseconds. */
function timestampOfMs(ms: number) {
  const whole = Math.floor(ms);
  const timestamp = timestampFromMs(whole);
  timestamp.nanos += Math.round((ms - whole) * 1000) * 1000;
  return timestamp;
}

export function msOfTimestamp(timestamp: Timestamp | undefined): number {
  if (!timestamp) return 0;
  return Number(timestamp.seconds) * 1000 + timestamp.nanos / 1e6;
}

export function encodeCaptureHeader(metadata: CaptureFileMetadata): Uint8Array {
  return sizeDelimitedEncode(dataSyncPb.DataCaptureMetadataSchema, captureMetadataToProto(metadata));
}

export function encodeCapturedReading(reading: CapturedReading): Uint8Array {
  if (reading.data.kind === 'struct') {
    return encodeTabularReadingDelimited(reading.timeRequestedMs, reading.timeReceivedMs, reading.data.value);
  }
  return sizeDelimitedEncode(dataSyncPb.SensorDataSchema, sensorDataToProto(reading));
}

/** Reads one varint at `offset`; undefined when the bytes end inside it. */
export function readVarint(bytes: Uint8Array, offset: number): { value: number; next: number } | undefined {
  let value = 0;
  let multiplier = 1;
  for (let index = offset; index < bytes.length && index < offset + 10; index++) {
    const byte = bytes[index] as number;
    value += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) {
      if (!Number.isSafeInteger(value)) return undefined;
      return { value, next: index + 1 };
    }
    multiplier *= 128;
  }
  return undefined;
}

export interface DecodedCaptureFile {
  readonly metadata: CaptureFileMetadata;
  readonly readings: CapturedReading[];
}

/**
 * The size-delimited messages of `bytes`: `[start, end)` of each message body, `prefix` where its size
 * varint starts. `complete` is the length of the longest prefix made of whole messages (what a
 * crash-interrupted file can keep).
 */
export function splitDelimited(bytes: Uint8Array): {
  messages: [start: number, end: number, prefix: number][];
  complete: number;
} {
  const messages: [number, number, number][] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const size = readVarint(bytes, offset);
    if (!size || size.next + size.value > bytes.length) break;
    messages.push([size.next, size.next + size.value, offset]);
    offset = size.next + size.value;
  }
  return { messages, complete: offset };
}

export function decodeCaptureMetadata(body: Uint8Array, filePath: string): CaptureFileMetadata {
  let header: dataSyncPb.DataCaptureMetadata;
  try {
    header = fromBinary(dataSyncPb.DataCaptureMetadataSchema, body);
  } catch (error) {
    throw new CaptureFileFormatError(filePath, 'the header is not a DataCaptureMetadata message', {
      cause: error,
    });
  }
  const dataType =
    header.type === dataSyncPb.DataType.TABULAR_SENSOR
      ? 'tabular'
      : header.type === dataSyncPb.DataType.BINARY_SENSOR
        ? 'binary'
        : undefined;
  if (!dataType) {
    throw new CaptureFileFormatError(
      filePath,
      `the header's type must be TABULAR_SENSOR or BINARY_SENSOR (got ${header.type})`,
    );
  }
  return {
    componentType: header.componentType,
    componentName: header.componentName,
    methodName: header.methodName,
    dataType,
    methodParameters: methodParametersFromProto(header.methodParameters, filePath),
    fileExtension: header.fileExtension,
    tags: header.tags,
  };
}

export function decodeCapturedReading(
  body: Uint8Array,
  dataType: CaptureDataType,
  filePath: string,
  index: number,
): CapturedReading {
  let message: dataSyncPb.SensorData;
  try {
    message = fromBinary(dataSyncPb.SensorDataSchema, body);
  } catch (error) {
    throw new CaptureFileFormatError(filePath, `reading ${index} is not a SensorData message`, {
      cause: error,
    });
  }
  const { data } = message;
  const expected = dataType === 'tabular' ? 'struct' : 'binary';
  if (data.case !== expected) {
    throw new CaptureFileFormatError(
      filePath,
      `reading ${index} carries ${data.case ?? 'no data'} but the file is ${dataType} (needs ${expected})`,
    );
  }
  return {
    timeRequestedMs: msOfTimestamp(message.metadata?.timeRequested),
    timeReceivedMs: msOfTimestamp(message.metadata?.timeReceived),
    data:
      data.case === 'struct' ? { kind: 'struct', value: data.value } : { kind: 'binary', value: data.value },
  };
}

/** The header of a file's bytes (the rest unread). */
export function peekCaptureMetadata(bytes: Uint8Array, filePath: string): CaptureFileMetadata {
  const size = readVarint(bytes, 0);
  if (!size || size.next + size.value > bytes.length)
    throw new CaptureFileFormatError(filePath, 'has no whole header');
  return decodeCaptureMetadata(bytes.subarray(size.next, size.next + size.value), filePath);
}

/** The header and the reading messages of a whole file; truncation is a CaptureFileFormatError. */
function splitCaptureFile(bytes: Uint8Array, filePath: string) {
  const { messages, complete } = splitDelimited(bytes);
  if (complete !== bytes.length) {
    throw new CaptureFileFormatError(
      filePath,
      `truncated: ${bytes.length - complete} trailing bytes are not a whole message`,
    );
  }
  const [first, ...rest] = messages;
  if (!first) throw new CaptureFileFormatError(filePath, 'has no header');
  return { metadata: decodeCaptureMetadata(bytes.subarray(first[0], first[1]), filePath), rest };
}

/**
 * A tabular file's readings as their size-delimited SensorData bytes, unparsed: exactly what a
 * `repeated SensorData` field holds on the wire, so an upload request is built by concatenation instead
 * of decoding and re-encoding every Struct. Each message's top-level fields are checked (metadata and
 * struct only), so a binary reading in a tabular file is still a format error.
 */
export function scanTabularCaptureFile(
  bytes: Uint8Array,
  filePath: string,
): { metadata: CaptureFileMetadata; rawReadings: Uint8Array[] } {
  const { metadata, rest } = splitCaptureFile(bytes, filePath);
  if (metadata.dataType !== 'tabular') {
    throw new CaptureFileFormatError(filePath, 'is a binary capture file, not tabular');
  }
  const rawReadings = rest.map(([start, end, prefix], index) => {
    checkTabularFields(bytes, start, end, filePath, index);
    return bytes.subarray(prefix, end);
  });
  return { metadata, rawReadings };
}

/** SensorData fields: 1 metadata, 2 struct (both length-delimited); anything else is not tabular. */
function checkTabularFields(
  bytes: Uint8Array,
  start: number,
  end: number,
  filePath: string,
  index: number,
): void {
  let position = start;
  while (position < end) {
    const tag = readVarint(bytes, position);
    const field = tag ? Math.floor(tag.value / 8) : 0;
    const length = tag && tag.value % 8 === 2 ? readVarint(bytes, tag.next) : undefined;
    if (!tag || !length || length.next + length.value > end || (field !== 1 && field !== 2)) {
      const what =
        field === 3 ? 'binary data but the file is tabular' : `a malformed or unexpected field ${field}`;
      throw new CaptureFileFormatError(filePath, `reading ${index} carries ${what}`);
    }
    position = length.next + length.value;
  }
}

/** A whole capture file in memory. Truncated or malformed content is a CaptureFileFormatError. */
export function decodeCaptureFile(bytes: Uint8Array, filePath: string): DecodedCaptureFile {
  const { metadata, rest } = splitCaptureFile(bytes, filePath);
  const readings = rest.map(([start, end], index) =>
    decodeCapturedReading(bytes.subarray(start, end), metadata.dataType, filePath, index),
  );
  return { metadata, readings };
}
