import { Binary, type Document, Double, Long, ObjectId } from 'bson';
import pg from 'pg';
import { bsonFromJson } from './bson-from-json.ts';
import type { BsonWriter } from './bson-writer.ts';

/**
 * PostgreSQL result values → BSON values the TS SDK can decode (wire-protocol §3.5: double, string,
 * document, array, binary, ObjectId, bool, datetime, null, int32, int64 — never Decimal128 or Timestamp).
 * Values arrive as PostgreSQL's text output (query with `rawTextTypes`) and are converted by column type:
 *
 * | PostgreSQL | BSON |
 * |---|---|
 * | boolean | bool |
 * | smallint, integer | int32 |
 * | bigint | int32 when it fits, else int64 |
 * | real, double precision, numeric | double (numeric: nearest double) |
 * | timestamptz, timestamp (read as UTC), date | datetime (millisecond precision) |
 * | json, jsonb | see `bsonFromJson` (documents, arrays, int32/int64/double, `{"$date"}`, `{"$oid"}`) |
 * | bytea | binary subtype 0 |
 * | arrays of the above | array |
 * | text, uuid, interval, anything else | string (PostgreSQL's text form) |
 *
 * A top-level column named `_id` holding 24 hex digits becomes an ObjectId (the `_id` of §3.2).
 */

/** Query option that makes `pg` hand every value over as PostgreSQL's text form. */
export const rawTextTypes = { getTypeParser: () => (text: string) => text };

export interface ResultField {
  name: string;
  dataTypeID: number;
}

type Converter = (text: string) => unknown;

const typeParser = pg.types.getTypeParser as (oid: number) => (text: string) => unknown;
/** text[]'s parser splits any one-dimensional or nested PostgreSQL array literal into strings and nulls. */
const parseTextArray = typeParser(1009);
const parseBytea = typeParser(17) as (text: string) => Buffer;

const scalarConverters: Record<number, Converter> = {
  16: (text) => text === 't',
  20: (text) => {
    const value = BigInt(text);
    return value >= -2_147_483_648n && value <= 2_147_483_647n ? Number(value) : Long.fromBigInt(value);
  },
  21: Number,
  23: Number,
  700: (text) => new Double(Number(text)),
  701: (text) => new Double(Number(text)),
  1700: (text) => new Double(Number(text)),
  1184: (text) => dateOrText(text, parsePostgresTimestamp(text)),
  1114: (text) => dateOrText(text, parsePostgresTimestamp(`${text}+00`)),
  1082: (text) => dateOrText(text, Date.parse(`${text}T00:00:00Z`)),
  114: (text) => bsonFromJson(JSON.parse(text)),
  3802: (text) => bsonFromJson(JSON.parse(text)),
  17: (text) => new Binary(parseBytea(text)),
};

/** Array type OID → element type OID. */
const arrayElements: Record<number, number> = {
  1000: 16,
  1001: 17,
  1005: 21,
  1007: 23,
  1016: 20,
  1021: 700,
  1022: 701,
  1231: 1700,
  1182: 1082,
  1115: 1114,
  1185: 1184,
  199: 114,
  3807: 3802,
};

const identity: Converter = (text) => text;

/** The converter for one column type (resolve once per result, apply per row). */
export function bsonConverterFor(dataTypeID: number): Converter {
  const scalar = scalarConverters[dataTypeID];
  if (scalar) return scalar;
  const element = arrayElements[dataTypeID];
  if (element !== undefined) {
    const convertElement = scalarConverters[element] ?? identity;
    return (text) => mapNested(parseTextArray(text), convertElement);
  }
  // Text-like arrays (text[], varchar[], uuid[], …) parse with the generic array parser; other arrays and
  // every remaining type keep PostgreSQL's text form.
  if (textArrayTypes.has(dataTypeID)) return (text) => mapNested(parseTextArray(text), identity);
  return identity;
}

const textArrayTypes = new Set([1009, 1015, 1014, 2951, 1003, 1187]);

function mapNested(value: unknown, convert: Converter): unknown {
  if (Array.isArray(value)) return value.map((item) => mapNested(item, convert));
  return value === null ? null : convert(value as string);
}

/** Column names as document keys: duplicates get `_2`, `_3`, …. */
function columnNames(fields: readonly ResultField[]): string[] {
  const seen = new Map<string, number>();
  return fields.map((field) => {
    const count = (seen.get(field.name) ?? 0) + 1;
    seen.set(field.name, count);
    return count === 1 ? field.name : `${field.name}_${count}`;
  });
}

/** Row converter for a whole result: column names (duplicates get `_2`, `_3`, …) and per-type converters. */
export function createRowConverter(fields: readonly ResultField[]): (row: readonly unknown[]) => Document {
  const names = columnNames(fields);
  const columns = fields.map((field, index) => {
    const name = names[index] as string;
    const convert = bsonConverterFor(field.dataTypeID);
    const isObjectId = name === '_id' && field.dataTypeID === 25;
    return { name, convert, isObjectId };
  });
  return (row) => {
    const document: Document = {};
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i] as (typeof columns)[number];
      const text = row[i];
      if (text === null || text === undefined) {
        document[column.name] = null;
      } else if (column.isObjectId && objectIdText.test(text as string)) {
        document[column.name] = new ObjectId(text as string);
      } else {
        document[column.name] = column.convert(text as string);
      }
    }
    return document;
  };
}

/** Converter for results whose single column is a json/jsonb document (e.g. compiled MQL). */
export function createJsonDocumentConverter(): (row: readonly unknown[]) => Document {
  return (row) => {
    const text = row[0];
    if (text === null || text === undefined) return {};
    const value = bsonFromJson(JSON.parse(text as string));
    return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)
      ? (value as Document)
      : { value };
  };
}

/** Writes one row as a BSON document; the same document `createRowConverter` builds, without building it. */
export type RowWriter = (writer: BsonWriter, row: readonly unknown[]) => Uint8Array;

type ColumnWriter = (writer: BsonWriter, name: string, text: string) => void;

/** A json/jsonb column; the empty object (e.g. `additional_parameters` of most readings) skips JSON.parse. */
function writeJsonColumn(writer: BsonWriter, name: string, text: string): void {
  if (text === '{}') {
    writer.beginDocumentField(name);
    writer.endField();
  } else {
    writer.jsonValue(name, JSON.parse(text));
  }
}

const int32Min = -2_147_483_648n;
const int32Max = 2_147_483_647n;

/** The common column types written directly; every other type goes through its converter. */
const columnWriters: Record<number, ColumnWriter> = {
  16: (writer, name, text) => writer.boolean(name, text === 't'),
  20: (writer, name, text) => {
    const value = BigInt(text);
    if (value >= int32Min && value <= int32Max) writer.int32(name, Number(value));
    else writer.int64(name, value);
  },
  21: (writer, name, text) => writer.int32(name, Number(text)),
  23: (writer, name, text) => writer.int32(name, Number(text)),
  700: (writer, name, text) => writer.double(name, Number(text)),
  701: (writer, name, text) => writer.double(name, Number(text)),
  1700: (writer, name, text) => writer.double(name, Number(text)),
  1184: (writer, name, text) => {
    const ms = parsePostgresTimestamp(text);
    if (Number.isNaN(ms)) writer.string(name, text);
    else writer.date(name, ms);
  },
  114: writeJsonColumn,
  3802: writeJsonColumn,
  25: (writer, name, text) => writer.string(name, text),
};

export function createRowWriter(fields: readonly ResultField[]): RowWriter {
  const names = columnNames(fields);
  const columns = fields.map((field, index) => {
    const name = names[index] as string;
    const direct = columnWriters[field.dataTypeID];
    const convert = bsonConverterFor(field.dataTypeID);
    const write: ColumnWriter =
      direct ??
      (convert === identity
        ? (writer, key, text) => writer.string(key, text)
        : (writer, key, text) => writer.convertedValue(key, convert(text)));
    return { name, write, isObjectId: name === '_id' && field.dataTypeID === 25 };
  });
  return (writer, row) => {
    writer.beginDocument();
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i] as (typeof columns)[number];
      const text = row[i];
      if (text === null || text === undefined) writer.null(column.name);
      else if (column.isObjectId && objectIdText.test(text as string))
        writer.objectId(column.name, text as string);
      else column.write(writer, column.name, text as string);
    }
    return writer.endDocument();
  };
}

/**
 * Writes the single json/jsonb column of a row (e.g. compiled MQL) as the document; a value that is not a
 * plain object comes back as `{value: …}`, an absent one as `{}`.
 */
export function createJsonDocumentWriter(): RowWriter {
  return (writer, row) => {
    writer.beginDocument();
    const text = row[0];
    if (text !== null && text !== undefined) {
      const value: unknown = JSON.parse(text as string);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        const object = value as Record<string, unknown>;
        if (!writer.extendedJson('value', object)) writer.jsonFields(object);
      } else {
        writer.jsonValue('value', value);
      }
    }
    return writer.endDocument();
  };
}

const objectIdText = /^[0-9a-f]{24}$/;

/** `2024-01-02 03:04:05.123456+00` (also `+05:30`, BC dates fail) → epoch ms, NaN when unparsable. */
export function parsePostgresTimestamp(text: string): number {
  // Fast path for what a UTC session prints: `YYYY-MM-DD HH:MM:SS[.ffffff]+00`.
  const end = text.length - 3;
  if (
    end >= 19 &&
    text.charCodeAt(4) === 45 &&
    text.charCodeAt(7) === 45 &&
    text.charCodeAt(10) === 32 &&
    text.charCodeAt(13) === 58 &&
    text.charCodeAt(16) === 58 &&
    text.charCodeAt(end) === 43 &&
    text.charCodeAt(end + 1) === 48 &&
    text.charCodeAt(end + 2) === 48 &&
    (end === 19 || (text.charCodeAt(19) === 46 && end > 20))
  ) {
    const fraction = end === 19 ? 0 : fractionMs(text, 20, end);
    const s = fixedDigits(text, 17, 2);
    if ((s | fraction) >= 0) {
      // Rows of one result mostly share the minute: its epoch value is computed once.
      if (minuteCache.prefix.length === 16 && text.startsWith(minuteCache.prefix)) {
        return minuteCache.ms + s * 1000 + fraction;
      }
      const y = fixedDigits(text, 0, 4);
      const mo = fixedDigits(text, 5, 2);
      const d = fixedDigits(text, 8, 2);
      const h = fixedDigits(text, 11, 2);
      const mi = fixedDigits(text, 14, 2);
      if ((y | mo | d | h | mi) >= 0) {
        // Date.UTC is linear in seconds and milliseconds, so minute + s * 1000 + ms is the same value.
        minuteCache.prefix = text.slice(0, 16);
        minuteCache.ms = Date.UTC(y, mo - 1, d, h, mi, 0, 0);
        return minuteCache.ms + s * 1000 + fraction;
      }
    }
  }
  const match =
    /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)?([+-]\d\d)(?::?(\d\d))?(?::?(\d\d))?$/.exec(text);
  if (!match) return Number.NaN;
  const [, y, mo, d, h, mi, s, fraction, offsetHours, offsetMinutes, offsetSeconds] = match;
  const ms = fraction ? Math.floor(Number(`0${fraction}`) * 1000) : 0;
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  const sign = (offsetHours as string).startsWith('-') ? -1 : 1;
  const offsetSec =
    Math.abs(Number(offsetHours)) * 3600 + Number(offsetMinutes ?? 0) * 60 + Number(offsetSeconds ?? 0);
  return utc - sign * offsetSec * 1000;
}

const minuteCache = { prefix: '', ms: 0 };

/**
 * Milliseconds of the fraction digits in [start, end): the first three digits, zero-padded — the same
 * value as `Math.floor(Number('0.' + digits) * 1000)` for PostgreSQL's at most six digits (checked for all
 * of them), or -1 when a character is not a digit.
 */
function fractionMs(text: string, start: number, end: number): number {
  const all = fixedDigits(text, start, end - start);
  if (all < 0) return -1;
  let ms = fixedDigits(text, start, Math.min(3, end - start));
  for (let digits = end - start; digits < 3; digits++) ms *= 10;
  return ms;
}

/** The number written by `count` ASCII digits at `start`, or -1. */
function fixedDigits(text: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function dateOrText(text: string, ms: number): Date | string {
  return Number.isNaN(ms) ? text : new Date(ms);
}
