import { serialize } from 'bson';
import { Aggregator } from 'mingo/aggregator';
import { Context, evalExpr } from 'mingo/core';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';
import { compare } from 'mingo/util';
import { compilePipeline, type MqlSource } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import type { Database, DatabaseClient } from '../../src/infra/postgres/database.ts';

/**
 * Helpers for MQL tests: a table of generated documents with the readings' shape (typed columns like the
 * document view), the compiled pipeline run on it, and a comparison that treats values the way MongoDB
 * does (numbers by value within a relative 1e-9, dates by instant, object keys in any order).
 */

export interface TestDocument {
  _id: string;
  component_name: string;
  method_name: string;
  time_received: Date;
  tags: string[];
  data: Record<string, unknown>;
}

export const docsSource: MqlSource = {
  relation: 'mql_docs',
  fields: [
    { name: '_id', sql: 'src._id', type: 'text' },
    { name: 'component_name', sql: 'src.component_name', type: 'text' },
    { name: 'method_name', sql: 'src.method_name', type: 'text' },
    { name: 'time_received', sql: 'src.time_received', type: 'date' },
    { name: 'tags', sql: 'src.tags', type: 'jsonb' },
    { name: 'data', sql: 'src.data', type: 'jsonb' },
  ],
};

export async function loadDocuments(db: Database, documents: readonly TestDocument[]): Promise<void> {
  await db.query(
    'CREATE TABLE IF NOT EXISTS mql_docs (_id text, component_name text, method_name text, time_received timestamptz, tags jsonb, data jsonb)',
  );
  await db.query('TRUNCATE mql_docs');
  await db.query(
    `INSERT INTO mql_docs SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[], $6::jsonb[])`,
    [
      documents.map((d) => d._id),
      documents.map((d) => d.component_name),
      documents.map((d) => d.method_name),
      documents.map((d) => d.time_received),
      documents.map((d) => JSON.stringify(d.tags)),
      documents.map((d) => JSON.stringify(d.data)),
    ],
  );
}

/** Compiles the pipeline (through real BSON bytes, as the RPC receives it) and runs it on mql_docs. */
export async function runCompiled(db: Database, pipeline: readonly object[]): Promise<unknown[]> {
  const stages = pipeline.map((stage, index) => decodeStage(serialize(stage), index));
  const { sql } = compilePipeline(stages, docsSource);
  return runDocumentQuery(db, sql);
}

/**
 * Runs compiled SQL (one json column `doc`) in a READ ONLY transaction with the compiler's search path and
 * UTC; `setup` runs first inside it (e.g. the query role and token). Returns the documents.
 */
export async function runDocumentQuery(
  db: Database,
  sql: string,
  setup?: (client: DatabaseClient) => Promise<void>,
): Promise<unknown[]> {
  const client = await db.connect();
  try {
    await client.query('BEGIN READ ONLY');
    await setup?.(client);
    await client.query('SET LOCAL search_path = sensordata, public, pg_catalog');
    await client.query(`SET LOCAL TimeZone = 'UTC'`);
    const result = await client.query<{ doc: unknown }>(sql);
    return result.rows.map((row) => fromTagged(row.doc));
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/** The compiler's tagged JSON → plain JS values with Dates. */
export function fromTagged(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromTagged);
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.length === 1 && keys[0] === '$date' && typeof record.$date === 'number')
      return new Date(record.$date);
    return Object.fromEntries(keys.map((key) => [key, fromTagged(record[key])]));
  }
  return value;
}

/**
 * A canonical form: sorted keys, numbers rounded to 9 significant digits, dates as ISO strings. `undefined`
 * array entries (mingo's `$push` of a missing field; MongoDB pushes nothing) are dropped.
 */
export function canonical(value: unknown, unorderedArrays = false): unknown {
  if (value instanceof Date) return { $date: value.toISOString() };
  if (typeof value === 'number') return Number.isInteger(value) ? value : Number(value.toPrecision(9));
  if (Array.isArray(value)) {
    const items = value.filter((item) => item !== undefined).map((item) => canonical(item, unorderedArrays));
    return unorderedArrays ? items.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)) : items;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort()
        .map((key) => [key, canonical(record[key], unorderedArrays || key.startsWith('set_'))]),
    );
  }
  return value;
}

export function canonicalSet(documents: readonly unknown[]): string[] {
  return documents.map((document) => JSON.stringify(canonical(document))).sort();
}

/**
 * The reference engine: mingo with every operator, except where mingo departs from MongoDB's documented
 * semantics:
 * - the aggregation-expression comparisons ($eq … $cmp) compare by BSON order across types like MongoDB
 *   does (mingo applies query-style type bracketing there, so `{$lt: ['$missing', 0]}` would be false where
 *   MongoDB answers true);
 * - the $min/$max accumulators compare whole values in BSON order (MongoDB: "if the expression resolves to
 *   an array, $max does not traverse the array and compares the array as a whole"). mingo sorts the values
 *   with its query comparator, which compares an array with a non-array by the array's elements (so [3, 4]
 *   is below 3.5 and equal to 3): not a total order, and its answer then depends on the documents' order
 *   (`$max` of 3 and [3] is whichever came last), which a GROUP BY cannot reproduce.
 */
export function mingoAggregate(documents: readonly object[], pipeline: readonly object[]): unknown[] {
  return new Aggregator(pipeline as Record<string, unknown>[], { context: referenceContext }).run(
    documents as Record<string, unknown>[],
  ) as unknown[];
}

function bsonComparison(test: (order: number) => boolean | number) {
  return (document: unknown, expression: unknown, options: unknown) => {
    const [a, b] = evalExpr(document as object, expression, options as never) as [unknown, unknown];
    return test(compare(a, b));
  };
}

/** BSON type order: null < numbers < strings < documents < arrays < ObjectId < booleans < dates. */
function bsonRank(value: unknown): number {
  if (value === null || value === undefined) return 1;
  if (typeof value === 'number') return 2;
  if (typeof value === 'string') return 3;
  if (Array.isArray(value)) return 5;
  if (typeof value === 'boolean') return 7;
  if (value instanceof Date) return 8;
  if ((value as { _bsontype?: string })._bsontype === 'ObjectId') return 6;
  return 4;
}

/** MongoDB's comparison of whole values: by type rank, then value; arrays element by element, a prefix first. */
export function bsonCompare(a: unknown, b: unknown): number {
  const rankA = bsonRank(a);
  const rankB = bsonRank(b);
  if (rankA !== rankB) return rankA < rankB ? -1 : 1;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const order = bsonCompare(a[i], b[i]);
      if (order !== 0) return order;
    }
    return Math.sign(a.length - b.length);
  }
  if (rankA === 4) return compare(a, b);
  const x = a instanceof Date ? a.getTime() : String(a);
  const y = b instanceof Date ? b.getTime() : String(b);
  if (rankA === 2) return Math.sign((a as number) - (b as number));
  return x < y ? -1 : x > y ? 1 : 0;
}

function wholeValueExtreme(sign: 1 | -1) {
  return (collection: unknown[], expression: unknown, options: unknown) => {
    const values = (
      accumulatorOperators.$push(collection as never, expression, options as never) as unknown[]
    ).filter((value) => value !== null && value !== undefined);
    let best: unknown = null;
    for (const value of values) {
      if (best === null || sign * bsonCompare(value, best) > 0) best = value;
    }
    return best;
  };
}

const referenceContext = Context.init({
  accumulator: { ...accumulatorOperators, $max: wholeValueExtreme(1), $min: wholeValueExtreme(-1) },
  expression: {
    ...expressionOperators,
    $eq: bsonComparison((order) => order === 0),
    $ne: bsonComparison((order) => order !== 0),
    $gt: bsonComparison((order) => order > 0),
    $gte: bsonComparison((order) => order >= 0),
    $lt: bsonComparison((order) => order < 0),
    $lte: bsonComparison((order) => order <= 0),
    $cmp: bsonComparison((order) => Math.sign(order)),
  },
  pipeline: pipelineOperators,
  projection: projectionOperators,
  query: queryOperators,
  window: windowOperators,
} as never);
