import { jsonbLiteral, quoteText, textArrayLiteral } from '../mql/mql-sql.ts';
import type { IndexSpec, PartialCondition } from './index-spec.ts';

/**
 * A custom index as PostgreSQL DDL: one expression per key, `sensordata.doc_key(data, '{a,b}')` (the JSON text
 * of the value; leakproof, so it works through the query views — see migration 0011), `DESC` for -1, UNIQUE when asked, and a partial predicate that
 * always starts with the organization — each organization's index covers only its own rows, and its
 * uniqueness holds within the organization. Built CONCURRENTLY: writes continue during the build.
 */

export interface IndexTarget {
  /** Table holding the documents, e.g. `public.hot_readings`. */
  table: string;
  /** The jsonb column holding the `data` document. */
  dataColumn: string;
}

export function keyExpression(target: IndexTarget, path: string): string {
  if (path === 'time_requested' || path === 'time_received') return path;
  const steps = path.split('.').slice(1);
  return `sensordata.doc_key(${target.dataColumn}, ${textArrayLiteral(steps)})`;
}

function conditionSql(target: IndexTarget, condition: PartialCondition): string {
  const expr = keyExpression(target, condition.path);
  if (condition.op === 'exists') return `${expr} IS NOT NULL`;
  const value = `(${target.dataColumn} #> ${textArrayLiteral(condition.path.split('.').slice(1))})`;
  const operator = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' }[condition.op];
  const type = typeof condition.value === 'number' ? 'number' : typeof condition.value;
  // MongoDB compares within one type; jsonb orders across types, so the type is pinned.
  return `(jsonb_typeof(${value}) = ${quoteText(type)} AND ${value} ${operator} ${jsonbLiteral(condition.value)})`;
}

export function createIndexSql(
  target: IndexTarget,
  spec: IndexSpec,
  pgIndexName: string,
  organizationId: string,
): string {
  const columns = spec.keys.map(
    (key) => `${keyExpression(target, key.path)}${key.direction === -1 ? ' DESC' : ''}`,
  );
  const predicate = [
    `organization_id = ${quoteText(organizationId)}::uuid`,
    ...spec.partial.map((condition) => conditionSql(target, condition)),
  ].join(' AND ');
  return `CREATE ${spec.unique ? 'UNIQUE ' : ''}INDEX CONCURRENTLY ${pgIndexName} ON ${target.table} (${columns.join(', ')}) WHERE ${predicate}`;
}
