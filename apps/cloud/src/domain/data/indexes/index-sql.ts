import { jsonbLiteral, quoteText, textArrayLiteral } from '../mql/mql-sql.ts';
import type { IndexSpec, PartialCondition } from './index-spec.ts';

/**
 * A custom index as PostgreSQL DDL: one expression per key, `sensordata.doc_index_key(doc, '{a,b}')` (the
 * canonical text of the value, '[' when an array is met; leakproof, so conditions on it pass the security
 * barrier of the hot-storage and sink views — the only relations with custom indexes; migration 0015),
 * `DESC` for -1, UNIQUE when asked, and a partial predicate that always starts with the owner (the
 * organization for the hot store, the pipeline for a sink): each index covers only its owner's rows, and
 * its uniqueness holds within them. A unique index leaves out documents whose keys reach an array (they
 * would all share the key '['): CreateIndex refuses it while such documents exist, pipeline runs refuse
 * such output (`arrayKeyCountSql`), and the hot-store copy of a later reading skips it (the reading stays
 * in `readings`; migration 0032 counts the skip in `hot_copy_skips`). Built CONCURRENTLY: writes continue.
 */

export interface IndexTarget {
  /** Table holding the documents, e.g. `public.hot_readings`. */
  table: string;
  /** The jsonb column holding the documents (`data` of a reading, a sink's whole `doc`). */
  dataColumn: string;
  /** Leading path step that names `dataColumn` in the document (`data`), or '' when it is the document. */
  dataPrefix: string;
  /** Paths that are real columns of the table (the capture times of a reading). */
  columns: readonly string[];
  /** The index's owner condition: `organization_id = …` / `pipeline_id = …`. */
  owner: string;
}

export function hotStoreTarget(organizationId: string): IndexTarget {
  return {
    table: 'public.hot_readings',
    dataColumn: 'data',
    dataPrefix: 'data',
    columns: ['time_requested', 'time_received'],
    owner: `organization_id = ${quoteText(organizationId)}::uuid`,
  };
}

/** Sink rows of one pipeline (the pipeline id implies its organization; 0010's view isolates). */
export function pipelineSinkTarget(pipelineId: string): IndexTarget {
  return {
    table: 'public.pipeline_sink',
    dataColumn: 'doc',
    dataPrefix: '',
    columns: [],
    owner: `pipeline_id = ${quoteText(pipelineId)}::uuid`,
  };
}

/** Steps below the data column for a document path. */
export function dataSteps(target: IndexTarget, path: string): string[] {
  const steps = path.split('.');
  return target.dataPrefix ? steps.slice(1) : steps;
}

export function keyExpression(target: IndexTarget, path: string, dataColumn = target.dataColumn): string {
  if (target.columns.includes(path)) return path;
  return `sensordata.doc_index_key(${dataColumn}, ${textArrayLiteral(dataSteps(target, path))})`;
}

function conditionSql(target: IndexTarget, condition: PartialCondition): string {
  const expr = keyExpression(target, condition.path);
  if (condition.op === 'exists') return `${expr} IS NOT NULL`;
  const value = `(${target.dataColumn} #> ${textArrayLiteral(dataSteps(target, condition.path))})`;
  const operator = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' }[condition.op];
  const type = typeof condition.value === 'number' ? 'number' : typeof condition.value;
  // MongoDB compares within one type; jsonb orders across types, so the type is pinned.
  return `(jsonb_typeof(${value}) = ${quoteText(type)} AND ${value} ${operator} ${jsonbLiteral(condition.value)})`;
}

/**
 * For a unique index: how many of the owner's documents (or of one pipeline run's, `runId`) reach an array
 * at each document key path — `SELECT path, n`, one row per such path. MongoDB enforces a unique index per
 * array element across documents, which no PostgreSQL expression index can; such documents are refused
 * instead of being silently left out (docs/custom-indexes.md).
 */
export function arrayKeyCountSql(target: IndexTarget, paths: readonly string[], runId?: string): string {
  const where = runId ? `run_id = ${quoteText(runId)}::uuid` : target.owner;
  const counts = paths
    .filter((path) => !target.columns.includes(path))
    .map((path) => {
      // The values MongoDB would index: an array on the way maps the rest of the path over its elements.
      // None (`[]`: no element has the field, or an empty array) is like a missing field, which the index
      // does not constrain either.
      const values = `sensordata.mql_path(${target.dataColumn}, ${textArrayLiteral(dataSteps(target, path))})`;
      return `SELECT ${quoteText(path)} AS path, count(*)::int AS n FROM ${target.table} WHERE ${where} AND ${keyExpression(target, path)} = '[' AND ${values} <> '[]'::jsonb`;
    });
  return `SELECT path, n FROM (${counts.join(' UNION ALL ')}) AS counts WHERE n > 0`;
}

/** The InvalidArgument message for documents with arrays under a unique index. */
export function arrayUnderUniqueMessage(
  index: string,
  counts: readonly { path: string; n: number }[],
): string {
  const found = counts.map((count) => `${count.n} at ${count.path}`).join(', ');
  return `documents with an array at a key of unique index ${JSON.stringify(index)} (${found}): MongoDB enforces a unique index per array element across documents, which a PostgreSQL index cannot, so they are refused — drop unique or index a path without arrays`;
}

export function createIndexSql(target: IndexTarget, spec: IndexSpec, pgIndexName: string): string {
  const columns = spec.keys.map(
    (key) => `${keyExpression(target, key.path)}${key.direction === -1 ? ' DESC' : ''}`,
  );
  const arrayFree = spec.unique
    ? spec.keys
        .filter((key) => !target.columns.includes(key.path))
        .map((key) => `${keyExpression(target, key.path)} IS DISTINCT FROM '['`)
    : [];
  const predicate = [
    target.owner,
    ...spec.partial.map((condition) => conditionSql(target, condition)),
    ...arrayFree,
  ].join(' AND ');
  return `CREATE ${spec.unique ? 'UNIQUE ' : ''}INDEX CONCURRENTLY ${pgIndexName} ON ${target.table} (${columns.join(', ')}) WHERE ${predicate}`;
}
