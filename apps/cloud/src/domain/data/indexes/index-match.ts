import type { Queryable } from '../../../infra/postgres/database.ts';
import type { MqlSource } from '../mql/mql-compiler.ts';
import { jsonbLiteral, quoteText, textArrayLiteral } from '../mql/mql-sql.ts';
import { isPlainObject, type MqlStage, type MqlValue } from '../mql/mql-values.ts';
import type { MqlDataSource } from '../mql/tabular-data-by-mql.ts';
import { isColumnPath } from './index-spec.ts';

/**
 * How an MQL `$match` reaches a custom index. The `$match` compiler's conditions (jsonpath over jsonb)
 * cannot use an expression index, and they stay as they are; for each equality (`{path: v}`, `$eq`,
 * `$in` of scalars) or number range (`$gt`, `$gte`, `$lt`, `$lte`) on an indexed path in the leading
 * `$match` stages, the source scan also gets a condition on `sensordata.doc_index_key(doc, path)`: one of
 * the values' keys, or the key range, or '['. MongoDB's match implies that condition (migrations 0015 and
 * 0017: '[' is the key of every document whose path meets an array; number keys are monotonic), so adding
 * it changes no result, and the planner can answer it from the organization's partial index.
 */

/** The SQL key of an indexed document path over the source alias `src`, or undefined if not indexed. */
export type IndexKeyOf = (path: string) => string | undefined;

/** The source with the index condition of the leading `$match` stages added to its own condition. */
export function withIndexHint(
  source: MqlSource,
  stages: readonly MqlStage[],
  keyOf: IndexKeyOf | undefined,
): MqlSource {
  const hint = keyOf ? indexHintCondition(stages, keyOf) : undefined;
  if (hint === undefined) return source;
  return { ...source, where: source.where ? `${source.where} AND ${hint}` : hint };
}

/** The extra source condition for the leading `$match` stages, or undefined when none applies. */
export function indexHintCondition(stages: readonly MqlStage[], keyOf: IndexKeyOf): string | undefined {
  const parts: string[] = [];
  for (const stage of stages) {
    if (stage.name !== '$match') break;
    collect(stage.spec, keyOf, parts);
  }
  return parts.length ? parts.join(' AND ') : undefined;
}

function collect(query: MqlValue, keyOf: IndexKeyOf, parts: string[]): void {
  if (!isPlainObject(query)) return;
  for (const [key, value] of Object.entries(query)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const item of value) collect(item, keyOf, parts);
      continue;
    }
    if (key.startsWith('$')) continue;
    const sqlKey = keyOf(key);
    const condition = sqlKey === undefined ? undefined : keyCondition(sqlKey, value);
    if (condition !== undefined) parts.push(condition);
  }
}

type Scalar = number | string | boolean;

function isScalar(value: MqlValue | undefined): value is Scalar {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value === 'string') return !value.includes('\u0000');
  return typeof value === 'boolean';
}

const arrayKey = quoteText('[');

/**
 * What MongoDB's condition on the path implies for its key, or undefined when nothing useful: equality
 * and `$in` of scalars → the keys of those values; number bounds (`$gt`/`$gte`/`$lt`/`$lte`) → the key range
 * between them (inclusive: the number keys are monotonic, not one-to-one — migration 0017); always or '['.
 */
function keyCondition(sqlKey: string, condition: MqlValue): string | undefined {
  if (isScalar(condition)) return `${sqlKey} = ANY(ARRAY[${canonicalKey(condition)}, ${arrayKey}])`;
  if (!isPlainObject(condition)) return undefined;
  const operators = Object.keys(condition);
  if (operators.length === 0 || !operators.every((operator) => operator.startsWith('$'))) return undefined;
  const eq = condition.$eq;
  if (isScalar(eq)) return `${sqlKey} = ANY(ARRAY[${canonicalKey(eq)}, ${arrayKey}])`;
  const list = condition.$in;
  if (Array.isArray(list) && list.length > 0 && list.every(isScalar)) {
    return `${sqlKey} = ANY(ARRAY[${[...list.map(canonicalKey), arrayKey].join(', ')}])`;
  }
  const lows = [condition.$gt, condition.$gte].filter(isFiniteNumber);
  const highs = [condition.$lt, condition.$lte].filter(isFiniteNumber);
  if (lows.length === 0 && highs.length === 0) return undefined;
  // Without a bound on one side: every number key lies between 'n' and 'o'.
  const low = lows.length ? canonicalKey(Math.max(...lows)) : quoteText('n');
  const high = highs.length ? canonicalKey(Math.min(...highs)) : quoteText('o');
  return `((${sqlKey} >= ${low} AND ${sqlKey} <= ${high}) OR ${sqlKey} = ${arrayKey})`;
}

function isFiniteNumber(value: MqlValue | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** The key doc_index_key gives a scalar: the function itself on the value (constant-folded by the planner). */
function canonicalKey(value: Scalar): string {
  return `sensordata.doc_index_key(${jsonbLiteral(value)}, '{}'::text[])`;
}

/**
 * The index keys of a data source: the document paths of the organization's custom indexes on the hot
 * store, or on the pipeline's sink, as `doc_index_key` over the source view's document column.
 */
export async function indexKeysOf(
  db: Queryable,
  organizationId: string,
  source: MqlDataSource,
): Promise<IndexKeyOf | undefined> {
  if (source.type === 'standard') return undefined;
  const hot = source.type === 'hot-storage';
  const result = await db.query<{ spec_json: string }>(
    `SELECT spec_json FROM custom_indexes
      WHERE organization_id = $1 AND collection_type = $2 AND pipeline_name = $3`,
    [organizationId, hot ? 'hot_store' : 'pipeline_sink', hot ? '' : source.pipelineId.toLowerCase()],
  );
  const paths = new Set<string>();
  for (const row of result.rows) {
    for (const path of Object.keys((JSON.parse(row.spec_json) as { key: object }).key)) {
      if (!isColumnPath(path, hot ? 'readings' : 'sink')) paths.add(path);
    }
  }
  if (paths.size === 0) return undefined;
  return (path) => {
    if (!paths.has(path)) return undefined;
    const steps = hot ? path.split('.').slice(1) : path.split('.');
    return `sensordata.doc_index_key(${hot ? 'src.data' : 'src.doc'}, ${textArrayLiteral(steps)})`;
  };
}
