/**
 * A direct encoder of tabular readings into `viam.app.datasync.v1.SensorData` bytes: the JSON value is
 * written as a `google.protobuf.Struct` field by field, without building Struct/Value message objects
 * first (the reflective path costs several times more per reading, and capture runs it for every
 * reading). The output is byte-for-byte what `toBinary(SensorDataSchema, …)` produces for the same
 * reading (a test compares them).
 */
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import type { JsonObject, JsonValue } from '../json.ts';

// SensorData: metadata = 1, struct = 2. SensorMetadata: time_requested = 1, time_received = 2.
// Timestamp: seconds = 1, nanos = 2. Struct: fields = 1 (map entry: key = 1, value = 2).
// Value: null_value = 1, number_value = 2, string_value = 3, bool_value = 4, struct_value = 5,
// list_value = 6. ListValue: values = 1.

function writeTimestamp(writer: BinaryWriter, field: number, ms: number): void {
  const whole = Math.floor(ms);
  const seconds = Math.floor(whole / 1000);
  const nanos = (whole - seconds * 1000) * 1_000_000 + Math.round((ms - whole) * 1000) * 1000;
  writer.tag(field, WireType.LengthDelimited).fork();
  if (seconds !== 0) writer.tag(1, WireType.Varint).int64(seconds);
  if (nanos !== 0) writer.tag(2, WireType.Varint).int32(nanos);
  writer.join();
}

function writeStruct(writer: BinaryWriter, object: JsonObject): void {
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    writer.tag(1, WireType.LengthDelimited).fork();
    writer.tag(1, WireType.LengthDelimited).string(key);
    writer.tag(2, WireType.LengthDelimited).fork();
    writeValue(writer, value);
    writer.join();
    writer.join();
  }
}

function writeValue(writer: BinaryWriter, value: JsonValue | undefined): void {
  if (value === null || value === undefined) {
    writer.tag(1, WireType.Varint).int32(0);
  } else if (typeof value === 'number') {
    writer.tag(2, WireType.Bit64).double(value);
  } else if (typeof value === 'string') {
    writer.tag(3, WireType.LengthDelimited).string(value);
  } else if (typeof value === 'boolean') {
    writer.tag(4, WireType.Varint).bool(value);
  } else if (Array.isArray(value)) {
    writer.tag(6, WireType.LengthDelimited).fork();
    for (const entry of value) {
      writer.tag(1, WireType.LengthDelimited).fork();
      writeValue(writer, entry);
      writer.join();
    }
    writer.join();
  } else {
    writer.tag(5, WireType.LengthDelimited).fork();
    writeStruct(writer, value);
    writer.join();
  }
}

/** Size-delimited SensorData bytes of one tabular reading (as written to capture files). */
export function encodeTabularReadingDelimited(
  timeRequestedMs: number,
  timeReceivedMs: number,
  struct: JsonObject,
): Uint8Array {
  const writer = new BinaryWriter();
  writer.fork();
  writer.tag(1, WireType.LengthDelimited).fork();
  writeTimestamp(writer, 1, timeRequestedMs);
  writeTimestamp(writer, 2, timeReceivedMs);
  writer.join();
  writer.tag(2, WireType.LengthDelimited).fork();
  writeStruct(writer, struct);
  writer.join();
  writer.join();
  return writer.finish();
}
