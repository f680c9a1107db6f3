/** JSON values (protobuf Struct/Value on the wire). */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { fromJson, toJson } from '@bufbuild/protobuf';
import { type Value, ValueSchema } from '@bufbuild/protobuf/wkt';

export type { JsonObject, JsonValue };

/** `map<string, google.protobuf.Value>` → JSON. */
export function valueMapToJson(map: { [key: string]: Value }): Record<string, JsonValue> {
  const result: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(map)) result[key] = toJson(ValueSchema, value);
  return result;
}

/** JSON → `map<string, google.protobuf.Value>`. */
export function jsonToValueMap(record: Record<string, JsonValue>): { [key: string]: Value } {
  const result: { [key: string]: Value } = {};
  for (const [key, value] of Object.entries(record)) result[key] = fromJson(ValueSchema, value);
  return result;
}
