import { Binary, Double, Long, ObjectId } from 'bson';

/**
 * Writes BSON documents straight into large shared buffers, for query results (thousands of documents
 * per response): no intermediate JS document per row and no copy per document — each finished document
 * is a view (`subarray`) of the current chunk. When a document does not fit, a larger chunk is started
 * and the part written so far moves there. The output is byte for byte what `bson.serialize` produces for
 * the values `bsonFromJson` / the row converters of bson-from-postgres.ts build (the tests compare them).
 *
 * Two number rules exist on purpose: `jsonValue` follows `bsonFromJson` (int32, else int64 for other safe
 * integers, else double), `convertedValue` follows `bson.serialize` for plain JS numbers (int32, else
 * double) and writes `Double`/`Long` instances as what they are.
 */

const typeDouble = 0x01;
const typeString = 0x02;
const typeDocument = 0x03;
const typeArray = 0x04;
const typeBinary = 0x05;
const typeObjectId = 0x07;
const typeBoolean = 0x08;
const typeDate = 0x09;
const typeNull = 0x0a;
const typeInt32 = 0x10;
const typeInt64 = 0x12;

const int32Min = -2_147_483_648;
const int32Max = 2_147_483_647;
const firstChunkBytes = 256 * 1024;
const hex24 = /^[0-9a-fA-F]{24}$/;

const indexKeys: string[] = Array.from({ length: 1000 }, (_, i) => String(i));
const indexKey = (i: number): string => indexKeys[i] ?? String(i);

/**
 * Writes `value` as UTF-8 at `at` (room reserved by the caller) and returns the end. Short ASCII strings
 * (ids, names, statuses: most strings of a result) are copied in JS, cheaper than a call into the encoder.
 */
function writeUtf8(chunk: Buffer, value: string, at: number): number {
  if (value.length > 48) return at + chunk.write(value, at, 'utf8');
  let end = at;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code >= 0x80) return at + chunk.write(value, at, 'utf8');
    chunk[end++] = code;
  }
  return end;
}

export class BsonWriter {
  private chunk: Buffer = Buffer.allocUnsafe(firstChunkBytes);
  private at = 0;
  /** Start of the document being written in `chunk`. */
  private documentStart = 0;
  /** Offsets (from documentStart) of the open documents' length fields. */
  private readonly open: number[] = [];

  /** Starts a top-level document. */
  beginDocument(): void {
    this.documentStart = this.at;
    this.open.length = 0;
    this.openContainer();
  }

  /** Ends the top-level document and returns its bytes (valid until the caller drops them). */
  endDocument(): Uint8Array {
    this.closeContainer();
    const bytes = this.chunk.subarray(this.documentStart, this.at);
    this.documentStart = this.at;
    return bytes;
  }

  null(key: string): void {
    this.element(typeNull, key);
  }

  boolean(key: string, value: boolean): void {
    this.element(typeBoolean, key);
    this.reserve(1);
    this.chunk[this.at++] = value ? 1 : 0;
  }

  int32(key: string, value: number): void {
    this.element(typeInt32, key);
    this.reserve(4);
    this.at = this.chunk.writeInt32LE(value, this.at);
  }

  double(key: string, value: number): void {
    this.element(typeDouble, key);
    this.reserve(8);
    this.at = this.chunk.writeDoubleLE(value, this.at);
  }

  int64(key: string, value: bigint): void {
    this.element(typeInt64, key);
    this.reserve(8);
    this.at = this.chunk.writeBigInt64LE(value, this.at);
  }

  /** A datetime: milliseconds since the epoch (an integer). */
  date(key: string, ms: number): void {
    this.element(typeDate, key);
    this.reserve(8);
    // An invalid Date (NaN) is written as 0, like bson.serialize does. Two 32-bit halves, no BigInt: the
    // low half is ms modulo 2^32, the high half the two's-complement rest (exact for integers below 2^53).
    const value = Number.isFinite(ms) ? ms : 0;
    this.chunk.writeUInt32LE(value >>> 0, this.at);
    this.at = this.chunk.writeInt32LE(Math.floor(value / 4294967296) | 0, this.at + 4);
  }

  string(key: string, value: string): void {
    this.element(typeString, key);
    this.reserve(5 + value.length * 3);
    const lengthAt = this.at;
    this.at += 4;
    this.at = writeUtf8(this.chunk, value, this.at);
    this.chunk[this.at++] = 0;
    this.chunk.writeInt32LE(this.at - lengthAt - 4, lengthAt);
  }

  /** An ObjectId from 24 hex digits (checked by the caller). */
  objectId(key: string, hex: string): void {
    this.element(typeObjectId, key);
    this.reserve(12);
    this.at += this.chunk.write(hex, this.at, 12, 'hex');
  }

  binary(key: string, bytes: Uint8Array, subtype = 0): void {
    this.element(typeBinary, key);
    this.reserve(5 + bytes.length);
    this.at = this.chunk.writeInt32LE(bytes.length, this.at);
    this.chunk[this.at++] = subtype;
    this.chunk.set(bytes, this.at);
    this.at += bytes.length;
  }

  beginDocumentField(key: string): void {
    this.element(typeDocument, key);
    this.openContainer();
  }

  beginArrayField(key: string): void {
    this.element(typeArray, key);
    this.openContainer();
  }

  endField(): void {
    this.closeContainer();
  }

  /** A value parsed from PostgreSQL json/jsonb text, with the conversions of `bsonFromJson`. */
  jsonValue(key: string, value: unknown): void {
    if (this.scalar(key, value)) return;
    if (typeof value === 'number') this.jsonNumber(key, value);
    else if (typeof value !== 'object') this.string(key, String(value));
    else if (Array.isArray(value)) this.array(key, value, this.jsonValue);
    else if (!this.extendedJson(key, value as Record<string, unknown>)) {
      this.beginDocumentField(key);
      this.jsonFields(value as Record<string, unknown>);
      this.endField();
    }
  }

  /** The fields of a parsed JSON object, into the open document. */
  jsonFields(object: Record<string, unknown>): void {
    for (const name in object) this.jsonValue(name, object[name]);
  }

  /** `{"$date": …}` / `{"$oid": …}` as bsonFromJson reads them; false when the object is not one. */
  extendedJson(key: string, object: Record<string, unknown>): boolean {
    let only: string | undefined;
    for (const name in object) {
      if (only !== undefined) return false;
      only = name;
    }
    if (only === '$date') {
      const raw = object.$date;
      if (typeof raw !== 'string' && typeof raw !== 'number') return false;
      const ms = new Date(raw).getTime();
      if (Number.isNaN(ms)) return false;
      this.date(key, ms);
      return true;
    }
    if (only === '$oid') {
      const raw = object.$oid;
      if (typeof raw !== 'string' || !hex24.test(raw)) return false;
      this.objectId(key, raw);
      return true;
    }
    return false;
  }

  /** A value built by the row converters (bson classes, Dates, plain values), as `bson.serialize` writes it. */
  convertedValue(key: string, value: unknown): void {
    if (this.scalar(key, value)) return;
    if (typeof value === 'number') {
      // bson.serialize: int32 when it is one (not -0), every other number a double.
      if (Number.isSafeInteger(value) && value >= int32Min && value <= int32Max && !Object.is(value, -0)) {
        this.int32(key, value);
      } else {
        this.double(key, value);
      }
    } else if (typeof value !== 'object') throw new TypeError(`cannot write a ${typeof value} as BSON`);
    else if (Array.isArray(value)) this.array(key, value, this.convertedValue);
    else if (value instanceof Date) this.date(key, value.getTime());
    else if (value instanceof Double) this.double(key, value.value);
    else if (value instanceof Long) this.int64(key, value.toBigInt());
    else if (value instanceof ObjectId) this.objectId(key, value.toHexString());
    else if (value instanceof Binary)
      this.binary(key, value.buffer.subarray(0, value.position), value.sub_type);
    else if (value instanceof Uint8Array) this.binary(key, value);
    else {
      this.beginDocumentField(key);
      const object = value as Record<string, unknown>;
      for (const name in object) this.convertedValue(name, object[name]);
      this.endField();
    }
  }

  /** null (also undefined), strings, booleans and bigints; false for every other value. */
  private scalar(key: string, value: unknown): boolean {
    if (value === null || value === undefined) this.null(key);
    else if (typeof value === 'string') this.string(key, value);
    else if (typeof value === 'boolean') this.boolean(key, value);
    else if (typeof value === 'bigint') this.int64(key, value);
    else return false;
    return true;
  }

  private array(key: string, items: readonly unknown[], write: (key: string, value: unknown) => void): void {
    this.beginArrayField(key);
    for (let i = 0; i < items.length; i++) write.call(this, indexKey(i), items[i]);
    this.endField();
  }

  private jsonNumber(key: string, value: number): void {
    if (Number.isInteger(value) && !Object.is(value, -0)) {
      if (value >= int32Min && value <= int32Max) {
        this.int32(key, value);
        return;
      }
      if (Number.isSafeInteger(value)) {
        this.int64(key, BigInt(value));
        return;
      }
    }
    this.double(key, value);
  }

  private element(type: number, key: string): void {
    // type + key + NUL; keys are usually short ASCII, written without a call into the encoder.
    this.reserve(2 + key.length * 3);
    const chunk = this.chunk;
    chunk[this.at++] = type;
    let i = 0;
    for (; i < key.length; i++) {
      const code = key.charCodeAt(i);
      if (code === 0)
        throw new TypeError(`BSON field names cannot contain NUL characters (${JSON.stringify(key)})`);
      if (code >= 0x80) break;
      chunk[this.at++] = code;
    }
    if (i < key.length) {
      const rest = key.slice(i);
      if (rest.includes('\u0000')) {
        throw new TypeError(`BSON field names cannot contain NUL characters (${JSON.stringify(key)})`);
      }
      this.at += chunk.write(rest, this.at, 'utf8');
    }
    chunk[this.at++] = 0;
  }

  private openContainer(): void {
    this.reserve(4);
    this.open.push(this.at - this.documentStart);
    this.at += 4;
  }

  private closeContainer(): void {
    this.reserve(1);
    this.chunk[this.at++] = 0;
    const lengthAt = this.documentStart + (this.open.pop() as number);
    this.chunk.writeInt32LE(this.at - lengthAt, lengthAt);
  }

  /** Makes room for `bytes` more; a document outgrowing its chunk moves to a new, larger one. */
  private reserve(bytes: number): void {
    if (this.at + bytes <= this.chunk.length) return;
    const written = this.at - this.documentStart;
    const next = Buffer.allocUnsafe(Math.max(this.chunk.length, 2 * (written + bytes)));
    this.chunk.copy(next, 0, this.documentStart, this.at);
    this.chunk = next;
    this.documentStart = 0;
    this.at = written;
  }
}
