/**
 * The tabular ingest hot path: an encoded `viam.app.datasync.v1.SensorData` holding a
 * `google.protobuf.Struct` becomes JSON text directly from the wire bytes — no message tree per reading,
 * no second serialisation. It accepts exactly the common shape (metadata with the two timestamps, then
 * the struct) and answers `undefined` for anything else (binary data, MIME types, annotations, repeated
 * or unknown fields, malformed bytes), which the caller then decodes with protobuf-es as before.
 *
 * The JSON equals `JSON.stringify` of what protobuf-es decodes (a differential test holds it to that):
 * a Value with no kind is null, a non-finite number is null, the last of several oneof members wins.
 * Only a repeated map key differs textually (it stays in the text; PostgreSQL's jsonb keeps the last
 * value, as protobuf-es does).
 */

export interface TabularSensorData {
  timeRequestedUs: bigint | undefined;
  timeReceivedUs: bigint | undefined;
  /** The Struct as JSON text. */
  json: string;
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;

/** Thrown inside the decoder when the bytes leave the fast path; never escapes decodeTabularSensorData. */
class NotFastPath extends Error {}
const notFast = new NotFastPath();

class WireReader {
  pos: number;
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array, start: number) {
    this.bytes = bytes;
    this.pos = start;
  }

  /** A varint that fits a JS number exactly (< 2^53); larger or negative int64 values leave the fast path. */
  varint(): number {
    let result = 0;
    let multiplier = 1;
    for (let shift = 0; shift < 53; shift += 7) {
      if (this.pos >= this.bytes.length) throw notFast;
      const byte = this.bytes[this.pos++] as number;
      result += (byte & 0x7f) * multiplier;
      if (byte < 0x80) return result;
      multiplier *= 128;
    }
    throw notFast;
  }

  /** End offset of a length-delimited field that starts at the current position. */
  lengthEnd(limit: number): number {
    const length = this.varint();
    const end = this.pos + length;
    if (end > limit) throw notFast;
    return end;
  }

  /**
   * The JSON string literal of the UTF-8 bytes up to `end`. Short plain-ASCII strings (field names, most
   * values) are built directly; anything else goes through the decoder and JSON.stringify.
   */
  jsonString(end: number): string {
    const { bytes } = this;
    if (end - this.pos <= 64) {
      let text = '"';
      let index = this.pos;
      for (; index < end; index++) {
        const byte = bytes[index] as number;
        if (byte < 0x20 || byte > 0x7e || byte === 0x22 || byte === 0x5c) break;
        text += String.fromCharCode(byte);
      }
      if (index === end) return `${text}"`;
    }
    return JSON.stringify(utf8Decoder.decode(bytes.subarray(this.pos, end)));
  }

  float64(): number {
    for (let index = 0; index < 8; index++) float64Bytes[index] = this.bytes[this.pos + index] as number;
    this.pos += 8;
    return float64View[0] as number;
  }
}

const utf8Decoder = new TextDecoder();
const float64View = new Float64Array(1);
const float64Bytes = new Uint8Array(float64View.buffer);

export function decodeTabularSensorData(bytes: Uint8Array): TabularSensorData | undefined {
  const reader = new WireReader(bytes, 0);
  try {
    let times: [bigint | undefined, bigint | undefined] | undefined;
    let json: string | undefined;
    while (reader.pos < bytes.length) {
      const tag = reader.varint();
      if ((tag & 7) !== WIRE_LEN) return undefined;
      const end = reader.lengthEnd(bytes.length);
      const field = tag >>> 3;
      if (field === 1 && times === undefined) times = readSensorMetadata(reader, end);
      else if (field === 2 && json === undefined) json = readStruct(reader, end);
      else return undefined; // binary data, or a repeated field protobuf would merge
      reader.pos = end;
    }
    if (json === undefined) return undefined;
    return { timeRequestedUs: times?.[0], timeReceivedUs: times?.[1], json };
  } catch (error) {
    if (error === notFast) return undefined;
    throw error;
  }
}

function readSensorMetadata(reader: WireReader, end: number): [bigint | undefined, bigint | undefined] {
  const times: [bigint | undefined, bigint | undefined] = [undefined, undefined];
  while (reader.pos < end) {
    const tag = reader.varint();
    const field = tag >>> 3;
    if ((tag & 7) !== WIRE_LEN || (field !== 1 && field !== 2) || times[field - 1] !== undefined) {
      throw notFast; // mime_type, annotations, unknown or repeated fields
    }
    const fieldEnd = reader.lengthEnd(end);
    times[field - 1] = readTimestampMicros(reader, fieldEnd);
    reader.pos = fieldEnd;
  }
  return times;
}

/** google.protobuf.Timestamp → microseconds (nanoseconds truncated, as the protobuf-es path does). */
function readTimestampMicros(reader: WireReader, end: number): bigint {
  let seconds = 0;
  let nanos = 0;
  while (reader.pos < end) {
    const tag = reader.varint();
    if ((tag & 7) !== WIRE_VARINT) throw notFast;
    const value = reader.varint(); // negative values are 10-byte varints: they leave the fast path
    if (tag >>> 3 === 1) seconds = value;
    else if (tag >>> 3 === 2 && value < 1_000_000_000) nanos = value;
    else throw notFast;
  }
  return BigInt(seconds) * 1_000_000n + BigInt(Math.trunc(nanos / 1000));
}

/** google.protobuf.Struct { map<string, Value> fields = 1 } → a JSON object. */
function readStruct(reader: WireReader, end: number): string {
  let json = '{';
  let first = true;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag !== ((1 << 3) | WIRE_LEN)) throw notFast;
    const entryEnd = reader.lengthEnd(end);
    let key = '""';
    let value = 'null';
    while (reader.pos < entryEnd) {
      const entryTag = reader.varint();
      if ((entryTag & 7) !== WIRE_LEN) throw notFast;
      const fieldEnd = reader.lengthEnd(entryEnd);
      if (entryTag >>> 3 === 1) key = reader.jsonString(fieldEnd);
      else if (entryTag >>> 3 === 2) value = readValue(reader, fieldEnd);
      else throw notFast;
      reader.pos = fieldEnd;
    }
    json += `${first ? '' : ','}${key}:${value}`;
    first = false;
  }
  return `${json}}`;
}

/** google.protobuf.Value (oneof kind: null 1, number 2, string 3, bool 4, struct 5, list 6). */
function readValue(reader: WireReader, end: number): string {
  let json = 'null';
  while (reader.pos < end) {
    const tag = reader.varint();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_VARINT) {
      reader.varint();
      json = 'null';
    } else if (field === 2 && wire === WIRE_FIXED64) {
      if (reader.pos + 8 > end) throw notFast;
      const number = reader.float64();
      json = Number.isFinite(number) ? String(number) : 'null';
    } else if (field === 4 && wire === WIRE_VARINT) {
      json = reader.varint() === 0 ? 'false' : 'true';
    } else if (wire === WIRE_LEN && field >= 3 && field <= 6 && field !== 4) {
      const fieldEnd = reader.lengthEnd(end);
      if (field === 3) json = reader.jsonString(fieldEnd);
      else if (field === 5) json = readStruct(reader, fieldEnd);
      else json = readList(reader, fieldEnd);
      reader.pos = fieldEnd;
    } else {
      throw notFast;
    }
  }
  return json;
}

/** google.protobuf.ListValue { repeated Value values = 1 } → a JSON array. */
function readList(reader: WireReader, end: number): string {
  let json = '[';
  let first = true;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag !== ((1 << 3) | WIRE_LEN)) throw notFast;
    const valueEnd = reader.lengthEnd(end);
    json += `${first ? '' : ','}${readValue(reader, valueEnd)}`;
    reader.pos = valueEnd;
    first = false;
  }
  return `${json}]`;
}
