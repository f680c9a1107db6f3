import type { Queryable } from '../../../infra/postgres/database.ts';
import type { MqlSource } from '../mql/mql-compiler.ts';
import { quoteText, textArrayLiteral } from '../mql/mql-sql.ts';
import { isPlainObject, type MqlStage, type MqlValue } from '../mql/mql-values.ts';
import type { MqlDataSource } from '../mql/tabular-data-by-mql.ts';
import { isColumnPath } from './index-spec.ts';

/**
 * How an MQL `$match` reaches a custom index. The `$match` compiler's conditions (jsonpath over jsonb)
 * cannot use an expression index, and they stay as they are; for each equality (`{path: v}`, `$eq`,
 * `$in` of scalars) on an indexed path in the leading `$match` stages, the source scan also gets
 * `sensordata.doc_index_key(doc, path) = ANY(canonical values + '[')`. MongoDB's match implies that
 * condition (migration 0015: '[' is the key of every document whose path meets an array), so adding it
 * changes no result, and the planner can answer it from the organization's partial index.
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
    const values = sqlKey === undefined ? undefined : equalityValues(value);
    if (sqlKey === undefined || values === undefined) continue;
    const keys = [...values.map(canonicalKey), quoteText('[')];
    parts.push(`${sqlKey} = ANY(ARRAY[${keys.join(', ')}]::text[])`);
  }
}

type Scalar = number | string | boolean;

function isScalar(value: MqlValue): value is Scalar {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value === 'string') return !value.includes('\u0000');
  return typeof value === 'boolean';
}

/** The scalar values one of which the path must equal, or undefined when the condition is another kind. */
function equalityValues(condition: MqlValue): Scalar[] | undefined {
  if (isScalar(condition)) return [condition];
  if (!isPlainObject(condition)) return undefined;
  const operators = Object.keys(condition);
  if (operators.length === 0 || !operators.every((operator) => operator.startsWith('$'))) return undefined;
  const eq = condition.$eq;
  if (eq !== undefined) return isScalar(eq) ? [eq] : undefined;
  const list = condition.$in;
  if (Array.isArray(list) && list.length > 0 && list.every(isScalar)) return list as Scalar[];
  return undefined;
}

/** The key doc_index_key gives a scalar, computed by PostgreSQL the same way (constant-folded). */
function canonicalKey(value: Scalar): string {
  if (typeof value === 'number') return `left(trim_scale(${quoteText(String(value))}::numeric)::text, 100)`;
  if (typeof value === 'string') return `left(to_jsonb(${quoteText(value)}::text)::text, 100)`;
  return quoteText(String(value));
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
