import { sessionSetup } from '../../src/domain/data/query-access/organization-query.ts';
import type { Database } from '../../src/infra/postgres/database.ts';

/** Helpers of the custom-index tests: plans as the query role sees them, and what PostgreSQL holds. */

/**
 * Runs `work` the way TabularDataBySQL/MQL run user statements (organization-query.ts `sessionSetup`: a
 * READ ONLY transaction with the organization's query token, as the `mcloud_query` role).
 */
export async function asQueryRole<T>(
  db: Database,
  organizationId: string,
  work: (query: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>,
): Promise<T> {
  const client = await db.connect();
  try {
    await client.query(sessionSetup(organizationId, 30_000));
    return await work(async (sql) => (await client.query(sql)).rows);
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
}

/** The plan of `sql` as the organization's query role gets it. */
export function explainAs(db: Database, organizationId: string, sql: string): Promise<string> {
  return asQueryRole(db, organizationId, async (query) =>
    (await query(`EXPLAIN ${sql}`)).map((row) => row['QUERY PLAN']).join('\n'),
  );
}

/** Custom (`cix_`) indexes on a table, with their definition and validity. */
export async function customPgIndexes(
  db: Database,
  table: string,
): Promise<{ name: string; definition: string; valid: boolean }[]> {
  const result = await db.query<{ name: string; definition: string; valid: boolean }>(
    `SELECT k.relname AS name, pg_get_indexdef(k.oid) AS definition, i.indisvalid AS valid
       FROM pg_index i JOIN pg_class k ON k.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
      WHERE t.relname = $1 AND k.relname LIKE 'cix\\_%' ORDER BY k.relname`,
    [table],
  );
  return result.rows;
}

/** Index scans PostgreSQL counted on an index (statistics are flushed when a backend goes idle). */
export async function indexScans(db: Database, indexName: string): Promise<number> {
  await db.query('SELECT pg_stat_clear_snapshot()');
  const result = await db.query<{ n: string }>(
    'SELECT coalesce(sum(idx_scan), 0)::text AS n FROM pg_stat_user_indexes WHERE indexrelname = $1',
    [indexName],
  );
  return Number(result.rows[0]?.n ?? 0);
}
