import { type Document, Double, Long, ObjectId } from 'bson';

/**
 * A JSON value (as parsed from PostgreSQL `json`/`jsonb` text) → a BSON value using only the types the TS
 * SDK's decoder understands (wire-protocol §3.5): integers in int32 range → int32, other safe integers →
 * int64, every other number → double, strings, booleans, null, arrays, documents. Two extended-JSON
 * shapes are turned into their BSON types, so SQL built over jsonb (the MQL compiler) can return them:
 * an object that is exactly `{"$date": <ISO string | epoch ms>}` → datetime and `{"$oid": <24 hex>}` →
 * ObjectId. Anything else is kept as a plain document.
 */
export function bsonFromJson(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return bsonNumber(value);
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(bsonFromJson);
  if (typeof value === 'object') {
    const special = extendedJsonValue(value as Record<string, unknown>);
    if (special !== undefined) return special;
    const document: Document = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      document[key] = bsonFromJson(item);
    }
    return document;
  }
  return String(value);
}

const int32Min = -2_147_483_648;
const int32Max = 2_147_483_647;

/** A JS number as BSON: int32 when it fits, int64 for other safe integers, double otherwise. */
export function bsonNumber(value: number): number | Long | Double {
  if (Number.isInteger(value)) {
    if (value >= int32Min && value <= int32Max) return value;
    if (Number.isSafeInteger(value)) return Long.fromNumber(value);
  }
  return new Double(value);
}

function extendedJsonValue(object: Record<string, unknown>): Date | ObjectId | undefined {
  const keys = Object.keys(object);
  if (keys.length !== 1) return undefined;
  if (keys[0] === '$date') {
    const raw = object.$date;
    if (typeof raw !== 'string' && typeof raw !== 'number') return undefined;
    const date = new Date(raw);
    return Number.isNaN(date.getTime()) ? undefined : date;
  }
  if (keys[0] === '$oid') {
    const raw = object.$oid;
    return typeof raw === 'string' && /^[0-9a-fA-F]{24}$/.test(raw) ? new ObjectId(raw) : undefined;
  }
  return undefined;
}
