import { deserialize } from 'bson';
import { invalidArgument } from '../../errors.ts';

/**
 * `index_spec` of CreateIndex (wire-protocol §2.4). Clients disagree on the encoding, all three are
 * accepted: TS sends one BSON `{keys, options?}`, Python one BSON of the dict it got (`{key(s), options}`
 * or the bare key document), the CLI raw JSON bytes (element 0 = key, element 1 = options). Each element
 * is BSON when it is a well-formed BSON document, otherwise UTF-8 JSON.
 */

export interface IndexKey {
  /** Dotted document path, e.g. `data.readings.temperature`. */
  path: string;
  direction: 1 | -1;
}

/** A `partialFilterExpression` condition on one path. */
export type PartialCondition =
  | { path: string; op: 'exists' }
  | { path: string; op: 'eq' | 'gt' | 'gte' | 'lt' | 'lte'; value: string | number | boolean };

export interface IndexSpec {
  keys: IndexKey[];
  name: string;
  unique: boolean;
  partial: PartialCondition[];
  /** `{key, options}` as JSON text (key order kept), what ListIndexes returns. */
  json: string;
}

/**
 * `maxKeys` keeps a btree entry under PostgreSQL's size limit (each key is at most 100 characters of
 * UTF-8, migration 0015).
 */
export const indexLimits = { maxKeys: 6, maxNameLength: 100, maxPathDepth: 16, maxElementBytes: 64 * 1024 };

/** Which documents an index is for: readings in the hot store, or a pipeline's output documents. */
export type IndexDocuments = 'readings' | 'sink';

const optionNames = new Set(['name', 'unique', 'partialFilterExpression', 'background']);
const comparisonOps = new Set(['$eq', '$gt', '$gte', '$lt', '$lte']);

export function parseIndexSpec(elements: readonly Uint8Array[], documents: IndexDocuments): IndexSpec {
  if (elements.length === 0) throw invalidArgument('index_spec', 'is required (the index key document)');
  if (elements.length > 2) {
    throw invalidArgument('index_spec', 'may have at most 2 elements (key, options)', elements.length);
  }
  const docs = elements.map((bytes, index) => decodeElement(bytes, `index_spec[${index}]`));
  let keys: unknown;
  let options: unknown;
  const first = docs[0] as Record<string, unknown>;
  const wrapped = isObject(first.keys) ? first.keys : isObject(first.key) ? first.key : undefined;
  if (docs.length === 1 && wrapped !== undefined) {
    // `{keys|key: {...}, options?: {...}}` (TS SDK, Python given the CLI's file shape).
    const extra = Object.keys(first).find((name) => !['keys', 'key', 'options'].includes(name));
    if (extra !== undefined) {
      throw invalidArgument(`index_spec.${extra}`, 'is not allowed next to keys and options');
    }
    keys = wrapped;
    options = first.options;
  } else {
    keys = first;
    options = docs[1];
  }
  const parsedKeys = parseKeys(keys, documents);
  const opts = parseOptions(options, documents);
  const name = opts.name ?? parsedKeys.map((key) => `${key.path}_${key.direction}`).join('_');
  if (name.length > indexLimits.maxNameLength) {
    throw invalidArgument(
      'index_spec.options.name',
      `must be at most ${indexLimits.maxNameLength} characters`,
      name,
    );
  }
  const keyObject = Object.fromEntries(parsedKeys.map((key) => [key.path, key.direction]));
  const shownOptions: Record<string, unknown> = { name };
  if (opts.unique) shownOptions.unique = true;
  if (opts.partialSource !== undefined) shownOptions.partialFilterExpression = opts.partialSource;
  return {
    keys: parsedKeys,
    name,
    unique: opts.unique,
    partial: opts.partial,
    json: JSON.stringify({ key: keyObject, options: shownOptions }),
  };
}

function decodeElement(bytes: Uint8Array, field: string): unknown {
  if (bytes.length > indexLimits.maxElementBytes) {
    throw invalidArgument(field, `must be at most ${indexLimits.maxElementBytes} bytes`, bytes.length);
  }
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length >= 5 && view.readInt32LE(0) === bytes.length && bytes[bytes.length - 1] === 0) {
    try {
      return deserialize(view, { promoteLongs: true, promoteValues: true });
    } catch (error) {
      throw invalidArgument(field, `is not a valid BSON document: ${(error as Error).message}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    throw invalidArgument(field, `is neither a BSON document nor JSON text: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw invalidArgument(field, 'must be a JSON object');
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseKeys(keys: unknown, documents: IndexDocuments): IndexKey[] {
  const field = 'index_spec.keys';
  if (!isObject(keys) || Object.keys(keys).length === 0) {
    throw invalidArgument(field, 'must be a non-empty document of {field: 1 | -1}');
  }
  const entries = Object.entries(keys);
  if (entries.length > indexLimits.maxKeys) {
    throw invalidArgument(field, `may have at most ${indexLimits.maxKeys} fields`, entries.length);
  }
  return entries.map(([path, direction]) => {
    checkPath(path, `${field}.${path}`, documents);
    const number = typeof direction === 'object' && direction !== null ? Number(direction) : direction;
    if (number !== 1 && number !== -1) {
      throw invalidArgument(
        `${field}.${path}`,
        'must be 1 or -1 (text, hashed, 2d and 2dsphere indexes are not supported)',
        JSON.stringify(direction),
      );
    }
    return { path, direction: number };
  });
}

const captureTimes = new Set(['time_requested', 'time_received']);

/** A path that is a plain column (not in the jsonb document) for these documents. */
export function isColumnPath(path: string, documents: IndexDocuments): boolean {
  return documents === 'readings' && captureTimes.has(path);
}

/**
 * Indexable paths: of readings, `data.<…>` (the captured payload) and the two capture times; of a sink's
 * documents, any path.
 */
export function checkPath(path: string, field: string, documents: IndexDocuments): void {
  const steps = path.split('.');
  if (isColumnPath(path, documents)) return;
  if (documents === 'readings' && (steps[0] !== 'data' || steps.length < 2)) {
    throw invalidArgument(
      field,
      'only time_requested, time_received and paths below data (data.<field>…) can be indexed',
      path,
    );
  }
  if (
    steps.length > indexLimits.maxPathDepth ||
    steps.some((step) => step === '' || step.startsWith('$') || step.includes('\u0000'))
  ) {
    throw invalidArgument(
      field,
      `a path needs at most ${indexLimits.maxPathDepth} non-empty steps not starting with $`,
      path,
    );
  }
}

interface ParsedOptions {
  name: string | undefined;
  unique: boolean;
  partial: PartialCondition[];
  partialSource: unknown;
}

function parseOptions(options: unknown, documents: IndexDocuments): ParsedOptions {
  const field = 'index_spec.options';
  if (options === undefined || options === null)
    return { name: undefined, unique: false, partial: [], partialSource: undefined };
  if (!isObject(options)) throw invalidArgument(field, 'must be a document');
  for (const key of Object.keys(options)) {
    if (!optionNames.has(key)) {
      throw invalidArgument(
        `${field}.${key}`,
        'is not supported (supported: name, unique, partialFilterExpression)',
      );
    }
  }
  const { name, unique, partialFilterExpression } = options;
  if (name !== undefined && (typeof name !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(name))) {
    throw invalidArgument(
      `${field}.name`,
      'must be a non-empty string of letters, digits, _ . -',
      JSON.stringify(name),
    );
  }
  if (unique !== undefined && typeof unique !== 'boolean') {
    throw invalidArgument(`${field}.unique`, 'must be a boolean', JSON.stringify(unique));
  }
  const partial =
    partialFilterExpression === undefined
      ? []
      : parsePartial(partialFilterExpression, `${field}.partialFilterExpression`, documents);
  return {
    name: name as string | undefined,
    unique: unique === true,
    partial,
    partialSource: partialFilterExpression,
  };
}

function parsePartial(filter: unknown, field: string, documents: IndexDocuments): PartialCondition[] {
  if (!isObject(filter)) throw invalidArgument(field, 'must be a document');
  const conditions: PartialCondition[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and') {
      if (!Array.isArray(value)) throw invalidArgument(`${field}.$and`, 'must be an array of documents');
      value.forEach((item, index) => {
        conditions.push(...parsePartial(item, `${field}.$and[${index}]`, documents));
      });
      continue;
    }
    const at = `${field}.${key}`;
    if (key.startsWith('$')) throw invalidArgument(at, 'only $and and field conditions can be expressed');
    checkPath(key, at, documents);
    const column = isColumnPath(key, documents);
    if (!isObject(value)) {
      if (column) throw invalidArgument(at, 'capture times only take $exists: true in a partial filter');
      conditions.push({ path: key, op: 'eq', value: scalar(value, at) });
      continue;
    }
    for (const [op, operand] of Object.entries(value)) {
      if (op === '$exists') {
        if (operand !== true)
          throw invalidArgument(
            `${at}.$exists`,
            'only $exists: true can be expressed',
            JSON.stringify(operand),
          );
        conditions.push({ path: key, op: 'exists' });
      } else if (comparisonOps.has(op) && column) {
        throw invalidArgument(`${at}.${op}`, 'capture times only take $exists: true in a partial filter');
      } else if (comparisonOps.has(op)) {
        conditions.push({ path: key, op: op.slice(1) as 'eq', value: scalar(operand, `${at}.${op}`) });
      } else {
        throw invalidArgument(
          `${at}.${op}`,
          'cannot be expressed (supported: $exists: true, $eq, $gt, $gte, $lt, $lte, $and)',
        );
      }
    }
  }
  return conditions;
}

function scalar(value: unknown, field: string): string | number | boolean {
  if (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  ) {
    return value;
  }
  throw invalidArgument(field, 'must be a string, finite number or boolean', JSON.stringify(value));
}
