import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { type Duration, durationFromMs } from '@bufbuild/protobuf/wkt';
import { failedPrecondition } from '../../domain/errors.ts';

/**
 * Typed reads from a stored part configuration. A value of the wrong type is a configuration mistake the
 * machine cannot fix by retrying: FailedPrecondition naming the JSON path, which viam-server reports as a
 * malformed configuration (wire-protocol §4.1).
 */
export class JsonReader {
  readonly path: string;
  readonly value: JsonObject;

  constructor(path: string, value: JsonObject) {
    this.path = path;
    this.value = value;
  }

  static of(path: string, value: unknown): JsonReader {
    if (!isObject(value)) throw wrongType(path, 'a JSON object', value);
    return new JsonReader(path, value);
  }

  at(key: string): string {
    return `${this.path}.${key}`;
  }

  has(key: string): boolean {
    return this.value[key] !== undefined && this.value[key] !== null;
  }

  string(key: string, fallback = ''): string {
    const value = this.value[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'string') throw wrongType(this.at(key), 'a string', value);
    return value;
  }

  bool(key: string): boolean | undefined {
    const value = this.value[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') throw wrongType(this.at(key), 'true or false', value);
    return value;
  }

  number(key: string): number | undefined {
    const value = this.value[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw wrongType(this.at(key), 'a number', value);
    return value;
  }

  integer(key: string, min: number, max: number): number | undefined {
    const value = this.number(key);
    if (value === undefined) return undefined;
    if (!Number.isInteger(value) || value < min || value > max) {
      throw failedPrecondition(`${this.at(key)}: must be an integer from ${min} to ${max} (got ${value})`);
    }
    return value;
  }

  object(key: string): JsonReader | undefined {
    const value = this.value[key];
    if (value === undefined || value === null) return undefined;
    return JsonReader.of(this.at(key), value);
  }

  /** A JSON object kept as a protobuf Struct (attributes and the like). */
  struct(key: string): JsonObject | undefined {
    return this.object(key)?.value;
  }

  list(key: string): JsonValue[] {
    const value = this.value[key];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) throw wrongType(this.at(key), 'a list', value);
    return value;
  }

  objects(key: string): JsonReader[] {
    return this.list(key).map((item, index) => JsonReader.of(`${this.at(key)}[${index}]`, item));
  }

  strings(key: string): string[] {
    return this.list(key).map((item, index) => {
      if (typeof item !== 'string') throw wrongType(`${this.at(key)}[${index}]`, 'a string', item);
      return item;
    });
  }

  stringMap(key: string): Record<string, string> {
    const object = this.object(key);
    if (!object) return {};
    const result: Record<string, string> = {};
    for (const name of Object.keys(object.value)) result[name] = object.string(name);
    return result;
  }

  /** A Go duration string ("1h2m3.5s", "250ms") or a number of seconds. */
  duration(key: string): Duration | undefined {
    const value = this.value[key];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0)
      return durationFromMs(value * 1000);
    if (typeof value === 'string') {
      const ms = goDurationMs(value);
      if (ms !== undefined) return durationFromMs(ms);
    }
    throw failedPrecondition(
      `${this.at(key)}: must be a duration such as "10s", "1m30s" or "250ms" (got ${JSON.stringify(value)})`,
    );
  }
}

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses Go's `time.ParseDuration` syntax (non-negative only); undefined when it does not parse. */
export function goDurationMs(text: string): number | undefined {
  if (text === '0') return 0;
  const pattern = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (const match of text.matchAll(pattern)) {
    total += Number(match[1]) * (unitMs[match[2] as string] as number);
    consumed += match[0].length;
  }
  return consumed === text.length && consumed > 0 ? total : undefined;
}

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function wrongType(path: string, expected: string, value: unknown) {
  const got = Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value;
  return failedPrecondition(`${path}: must be ${expected} (got ${got})`);
}
