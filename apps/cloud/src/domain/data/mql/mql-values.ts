import { BSONRegExp, Decimal128, type Document, deserialize, ObjectId } from 'bson';
import { invalidArgument } from '../../errors.ts';

/**
 * Pipeline stages as they arrive (`mql_binary`: one BSON document per stage) and the literal values inside
 * them. Parsing is lenient the way wire-protocol §3.5 asks (the TS SDK's encoder pads documents and emits
 * surrogate halves as 3-byte sequences), and every value is reduced to what the compiler understands:
 * numbers, strings, booleans, null, dates, ObjectIds, regular expressions, arrays and documents.
 */

export type MqlValue =
  | number
  | string
  | boolean
  | null
  | Date
  | ObjectId
  | MqlRegex
  | MqlValue[]
  | { [key: string]: MqlValue };

export interface MqlRegex {
  regex: true;
  pattern: string;
  options: string;
}

export interface MqlStage {
  /** Where the stage came from, e.g. `mql_binary` or `saved query "hourly"`; with `index`, in every error. */
  field: string;
  index: number;
  name: string;
  spec: MqlValue;
}

export const mqlLimits = { maxStages: 1000, maxStageBytes: 1024 * 1024 } as const;

export function isRegex(value: unknown): value is MqlRegex {
  return typeof value === 'object' && value !== null && (value as MqlRegex).regex === true;
}

export function isPlainObject(value: unknown): value is { [key: string]: MqlValue } {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Date) &&
    !(value instanceof ObjectId) &&
    !isRegex(value)
  );
}

/** `mql_binary[2] ($group)`: how error messages name a stage. */
export function stageLabel(stage: MqlStage): string {
  return `${stage.field}[${stage.index}] (${stage.name})`;
}

/** Decodes one `mql_binary` element; malformed input names the stage index. */
export function decodeStage(bytes: Uint8Array, index: number, field = 'mql_binary'): MqlStage {
  const where = `${field}[${index}]`;
  if (bytes.length > mqlLimits.maxStageBytes) {
    throw invalidArgument(where, `a stage must be at most ${mqlLimits.maxStageBytes} bytes`, bytes.length);
  }
  let document: Document;
  try {
    document = deserialize(bytes, {
      promoteLongs: true,
      promoteValues: true,
      bsonRegExp: true,
      allowObjectSmallerThanBufferSize: true,
      validation: { utf8: false },
    });
  } catch (error) {
    throw invalidArgument(where, `is not a valid BSON document (${(error as Error).message})`);
  }
  const keys = Object.keys(document);
  if (keys.length !== 1) {
    throw invalidArgument(
      where,
      'a stage must be a document with exactly one key such as $match',
      keys.join(','),
    );
  }
  const name = keys[0] as string;
  return { field, index, name, spec: fromBson(document[name], `${where} (${name})`) };
}

function fromBson(value: unknown, where: string): MqlValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date || value instanceof ObjectId) return value;
  if (value instanceof BSONRegExp) return { regex: true, pattern: value.pattern, options: value.options };
  if (value instanceof RegExp) return { regex: true, pattern: value.source, options: value.flags };
  if (value instanceof Decimal128) return Number(value.toString());
  if (Array.isArray(value)) return value.map((item) => fromBson(item, where));
  const bsonType = (value as { _bsontype?: string })._bsontype;
  if (bsonType === 'Long' || bsonType === 'Int32' || bsonType === 'Double') {
    return Number((value as { valueOf(): unknown }).valueOf());
  }
  if (bsonType !== undefined) {
    throw invalidArgument(where, `BSON type ${bsonType} is not supported in a pipeline`);
  }
  const result: { [key: string]: MqlValue } = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    result[key] = fromBson(item, where);
  }
  return result;
}

/** A literal in the compiler's tagged JSON form (dates/ObjectIds as `$date`/`$oid`); regexes are refused. */
export function toTaggedJson(value: MqlValue, where: string): unknown {
  if (value instanceof Date) return { $date: value.getTime() };
  if (value instanceof ObjectId) return { $oid: value.toHexString() };
  if (isRegex(value)) throw invalidArgument(where, 'a regular expression is only allowed in $match');
  if (Array.isArray(value)) return value.map((item) => toTaggedJson(item, where));
  if (isPlainObject(value)) {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) result[key] = toTaggedJson(item, where);
    return result;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw invalidArgument(where, 'NaN and Infinity are not supported', value);
  }
  return value;
}
