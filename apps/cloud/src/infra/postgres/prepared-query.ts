import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

const names = new Map<string, string>();

/**
 * A query run as a named prepared statement: each pooled connection parses and plans it once, and
 * after a few executions PostgreSQL keeps a generic plan, so hot read paths skip planning (which costs
 * more than executing a LIMIT 50 index probe over a partitioned table). The name derives from the text,
 * so the same name never carries two texts. Use only for statements whose text comes from a bounded set
 * of shapes (values always as parameters), since every connection keeps each one it has seen.
 */
export function preparedQuery(text: string, values: unknown[]): QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `mc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    if (names.size < 10_000) names.set(text, name);
  }
  return { name, text, values };
}
