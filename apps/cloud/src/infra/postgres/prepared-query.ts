import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

const names = new Map<string, string>();

/**
 * A query run as a named prepared statement: each pooled connection parses it once. PostgreSQL switches a
 * prepared statement to its generic plan (no planning per execution) only when that plan's estimated
 * cost is close to the custom plans'; the readings page statements never get there
 * (pg_prepared_statements showed 0 generic / 220 custom executions: plan-time partition pruning wins the
 * comparison), so they are still planned per execution. `plan_cache_mode = force_generic_plan` halved
 * their time in a test session, but it is a session setting that would change every parameterized query
 * on the pool. The name derives from the text, so the same name never carries two texts. Use only for
 * statements whose text comes from a bounded set of shapes (values always as parameters), since every
 * connection keeps each one it has seen.
 */
export function preparedQuery(text: string, values: unknown[]): QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `mc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    if (names.size < 10_000) names.set(text, name);
  }
  return { name, text, values };
}
