import type { TabularReadings } from '../../domain/data/ingest/tabular-readings.ts';

/**
 * The tabular ingest hot path: the encoded `viam.app.datasync.v1.SensorData` entries of one upload, each
 * holding a `google.protobuf.Struct`, become one UTF-8 JSON array of their payloads directly from the
 * wire bytes — no message tree, no strings per value, no second serialisation; the ingest path copies
 * those bytes into binary COPY rows. It accepts exactly the common shape (metadata with the two
 * timestamps, then the struct) and answers `undefined` for anything else (binary data, MIME types,
 * annotations, repeated or unknown fields, malformed bytes, times before 1970 or after the year 5000),
 * which the caller then decodes with protobuf-es as before.
 *
 * The JSON equals `JSON.stringify` of what protobuf-es decodes (a differential test holds it to that):
 * a Value with no kind is null, a non-finite number is null, the last of several oneof members wins.
 * Only a repeated map key differs textually (it stays in the text; PostgreSQL's jsonb keeps the last
 * value, as protobuf-es does).
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;

/** Thrown inside the decoder when the bytes leave the fast path; never escapes decodeTabularReadings. */
class NotFastPath extends Error {}
const notFast = new NotFastPath();

class WireReader {
  pos: number;
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.pos = 0;
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

  float64(): number {
    for (let index = 0; index < 8; index++) float64Bytes[index] = this.bytes[this.pos + index] as number;
    this.pos += 8;
    return float64View[0] as number;
  }
}

/** The JSON being written: a growing byte buffer. */
class JsonOutput {
  bytes: Buffer;
  pos = 0;
  constructor(capacity: number) {
    this.bytes = Buffer.allocUnsafe(capacity);
  }

  reserve(count: number): void {
    if (this.pos + count <= this.bytes.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.pos + count));
    this.bytes.copy(grown, 0, 0, this.pos);
    this.bytes = grown;
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.pos++] = value;
  }

  /** Plain ASCII text (numbers, literals). */
  ascii(text: string): void {
    this.reserve(text.length);
    const { bytes } = this;
    for (let index = 0; index < text.length; index++) bytes[this.pos++] = text.charCodeAt(index);
  }

  /**
   * A finite number as JSON.stringify writes it (the shortest decimal that reads back as the same
   * double), non-finite as null. Integers and decimals with up to 6 fraction digits below 1e9 — nearly
   * every sensor value — are written digit by digit without making a string: below 1e9 a double's
   * spacing is under 1e-6, so at most one decimal with that many fraction digits reads back as the
   * value, and the first digit count that does is the shortest form. Everything else goes through String.
   */
  number(value: number): void {
    if (!Number.isFinite(value)) {
      this.ascii('null');
      return;
    }
    const magnitude = Math.abs(value);
    if (magnitude < 1e9) {
      let scale = 1;
      for (let digits = 0; digits <= 6; digits++) {
        const scaled = Math.round(magnitude * scale);
        if (scaled / scale === magnitude) {
          if (value < 0 && scaled !== 0) this.byte(0x2d); // -
          this.decimal(scaled, digits);
          return;
        }
        scale *= 10;
      }
    }
    this.ascii(String(value));
  }

  /** `integer / 10^digits` in positional notation (`integer` ≥ 0, below 1e15). */
  private decimal(integer: number, digits: number): void {
    let length = 1;
    for (let rest = Math.floor(integer / 10); rest > 0; rest = Math.floor(rest / 10)) length++;
    const intDigits = Math.max(length - digits, 1);
    const total = intDigits + (digits > 0 ? digits + 1 : 0);
    this.reserve(total);
    const { bytes } = this;
    let pos = this.pos + total - 1;
    let rest = integer;
    for (let index = 0; index < digits; index++) {
      bytes[pos--] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    if (digits > 0) bytes[pos--] = 0x2e; // .
    for (let index = 0; index < intDigits; index++) {
      bytes[pos--] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    this.pos += total;
  }

  utf8(text: string): void {
    this.reserve(text.length * 3);
    this.pos += this.bytes.write(text, this.pos, 'utf8');
  }

  /**
   * The JSON string literal of the UTF-8 bytes `input[start, end)`. Printable ASCII without quote or
   * backslash (field names, most values) is copied as is; anything else goes through the decoder and
   * JSON.stringify, exactly as protobuf-es + JSON.stringify would render it.
   */
  jsonString(input: Uint8Array, start: number, end: number): void {
    let index = start;
    for (; index < end; index++) {
      const byte = input[index] as number;
      if (byte < 0x20 || byte > 0x7e || byte === 0x22 || byte === 0x5c) break;
    }
    if (index === end) {
      this.reserve(end - start + 2);
      this.bytes[this.pos++] = 0x22;
      this.bytes.set(input.subarray(start, end), this.pos);
      this.pos += end - start;
      this.bytes[this.pos++] = 0x22;
      return;
    }
    this.utf8(JSON.stringify(utf8Decoder.decode(input.subarray(start, end))));
  }
}

const utf8Decoder = new TextDecoder();
const float64View = new Float64Array(1);
const float64Bytes = new Uint8Array(float64View.buffer);

/** Microseconds are exact in a double until 2255; later instants are rejected anyway (slow path). */
const maxFastSeconds = 95_617_584_000; // 5000-01-01T00:00:00Z
const comma = 0x2c;

/** The readings of an upload's SensorData entries, or undefined when any entry leaves the fast path. */
export function decodeTabularReadings(contents: readonly Uint8Array[]): TabularReadings | undefined {
  const count = contents.length;
  let capacity = 2;
  for (const bytes of contents) capacity += bytes.length * 2 + 1;
  const out = new JsonOutput(capacity);
  const timeRequestedUs: (number | null)[] = new Array(count);
  const timeReceivedUs: (number | null)[] = new Array(count);
  const payloadStarts = new Uint32Array(count);
  const payloadEnds = new Uint32Array(count);
  const times: [number | null, number | null] = [null, null];
  out.byte(0x5b); // [
  try {
    for (let index = 0; index < count; index++) {
      if (index > 0) out.byte(comma);
      payloadStarts[index] = out.pos;
      readSensorData(new WireReader(contents[index] as Uint8Array), out, times);
      payloadEnds[index] = out.pos;
      timeRequestedUs[index] = times[0];
      timeReceivedUs[index] = times[1];
    }
  } catch (error) {
    if (error === notFast) return undefined;
    throw error;
  }
  out.byte(0x5d); // ]
  return {
    count,
    timeRequestedUs,
    timeReceivedUs,
    json: out.bytes.subarray(0, out.pos),
    payloadStarts,
    payloadEnds,
  };
}

/** SensorData { SensorMetadata metadata = 1; oneof data { Struct struct = 2; bytes binary = 3; } } */
function readSensorData(reader: WireReader, out: JsonOutput, times: [number | null, number | null]): void {
  const { bytes } = reader;
  let sawMetadata = false;
  let sawStruct = false;
  times[0] = null;
  times[1] = null;
  while (reader.pos < bytes.length) {
    const tag = reader.varint();
    if ((tag & 7) !== WIRE_LEN) throw notFast;
    const end = reader.lengthEnd(bytes.length);
    const field = tag >>> 3;
    if (field === 1 && !sawMetadata) {
      readSensorMetadata(reader, end, times);
      sawMetadata = true;
    } else if (field === 2 && !sawStruct) {
      readStruct(reader, end, out);
      sawStruct = true;
    } else {
      throw notFast; // binary data, or a repeated field protobuf would merge
    }
    reader.pos = end;
  }
  if (!sawStruct) throw notFast;
}

function readSensorMetadata(reader: WireReader, end: number, times: [number | null, number | null]): void {
  while (reader.pos < end) {
    const tag = reader.varint();
    const field = tag >>> 3;
    if ((tag & 7) !== WIRE_LEN || (field !== 1 && field !== 2) || times[field - 1] !== null) {
      throw notFast; // mime_type, annotations, unknown or repeated fields
    }
    const fieldEnd = reader.lengthEnd(end);
    times[field - 1] = readTimestampMicros(reader, fieldEnd);
    reader.pos = fieldEnd;
  }
}

/** google.protobuf.Timestamp → microseconds (nanoseconds truncated, as the protobuf-es path does). */
function readTimestampMicros(reader: WireReader, end: number): number {
  let seconds = 0;
  let nanos = 0;
  while (reader.pos < end) {
    const tag = reader.varint();
    if ((tag & 7) !== WIRE_VARINT) throw notFast;
    const value = reader.varint(); // negative values are 10-byte varints: they leave the fast path
    if (tag >>> 3 === 1 && value < maxFastSeconds) seconds = value;
    else if (tag >>> 3 === 2 && value < 1_000_000_000) nanos = value;
    else throw notFast;
  }
  return seconds * 1_000_000 + Math.trunc(nanos / 1000);
}

/** google.protobuf.Struct { map<string, Value> fields = 1 } → a JSON object. */
function readStruct(reader: WireReader, end: number, out: JsonOutput): void {
  const { bytes } = reader;
  out.byte(0x7b); // {
  let first = true;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag !== ((1 << 3) | WIRE_LEN)) throw notFast;
    const entryEnd = reader.lengthEnd(end);
    // The key is written first in JSON, but protobuf may send the value first, repeat either (the last
    // counts; earlier values are still checked) or omit either (empty key, null value).
    let keyStart = -1;
    let keyEnd = -1;
    let valueStart = -1;
    let valueEnd = -1;
    while (reader.pos < entryEnd) {
      const entryTag = reader.varint();
      if ((entryTag & 7) !== WIRE_LEN) throw notFast;
      const fieldEnd = reader.lengthEnd(entryEnd);
      if (entryTag >>> 3 === 1) {
        keyStart = reader.pos;
        keyEnd = fieldEnd;
      } else if (entryTag >>> 3 === 2) {
        if (valueStart >= 0) checkValue(reader, valueStart, valueEnd, out);
        valueStart = reader.pos;
        valueEnd = fieldEnd;
      } else {
        throw notFast;
      }
      reader.pos = fieldEnd;
    }
    if (!first) out.byte(comma);
    first = false;
    if (keyStart < 0) out.ascii('""');
    else out.jsonString(bytes, keyStart, keyEnd);
    out.byte(0x3a); // :
    if (valueStart < 0) {
      out.ascii('null');
    } else {
      reader.pos = valueStart;
      readValue(reader, valueEnd, out);
    }
    reader.pos = entryEnd;
  }
  out.byte(0x7d); // }
}

/** Decodes a Value only to check it, writing nothing (a repeated map value that a later one replaces). */
function checkValue(reader: WireReader, start: number, end: number, out: JsonOutput): void {
  const saved = out.pos;
  const resume = reader.pos;
  reader.pos = start;
  readValue(reader, end, out);
  out.pos = saved;
  reader.pos = resume;
}

/** google.protobuf.Value (oneof kind: null 1, number 2, string 3, bool 4, struct 5, list 6). */
function readValue(reader: WireReader, end: number, out: JsonOutput): void {
  const outStart = out.pos;
  out.ascii('null'); // a Value with no kind
  while (reader.pos < end) {
    const tag = reader.varint();
    const field = tag >>> 3;
    const wire = tag & 7;
    out.pos = outStart; // the last member of the oneof wins
    if (field === 1 && wire === WIRE_VARINT) {
      reader.varint();
      out.ascii('null');
    } else if (field === 2 && wire === WIRE_FIXED64) {
      if (reader.pos + 8 > end) throw notFast;
      out.number(reader.float64());
    } else if (field === 4 && wire === WIRE_VARINT) {
      out.ascii(reader.varint() === 0 ? 'false' : 'true');
    } else if (wire === WIRE_LEN && field >= 3 && field <= 6 && field !== 4) {
      const fieldEnd = reader.lengthEnd(end);
      if (field === 3) out.jsonString(reader.bytes, reader.pos, fieldEnd);
      else if (field === 5) readStruct(reader, fieldEnd, out);
      else readList(reader, fieldEnd, out);
      reader.pos = fieldEnd;
    } else {
      throw notFast;
    }
  }
}

/** google.protobuf.ListValue { repeated Value values = 1 } → a JSON array. */
function readList(reader: WireReader, end: number, out: JsonOutput): void {
  out.byte(0x5b); // [
  let first = true;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag !== ((1 << 3) | WIRE_LEN)) throw notFast;
    const valueEnd = reader.lengthEnd(end);
    if (!first) out.byte(comma);
    first = false;
    readValue(reader, valueEnd, out);
    reader.pos = valueEnd;
  }
  out.byte(0x5d); // ]
}
