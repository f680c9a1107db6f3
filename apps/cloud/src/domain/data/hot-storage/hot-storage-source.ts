import type { Queryable } from '../../../infra/postgres/database.ts';
import { type MqlSource, readingsSource } from '../mql/mql-compiler.ts';
import { quoteText } from '../mql/mql-sql.ts';

/**
 * HOT_STORAGE (wire-protocol §2.3, §3.1): the same document shape as the readings, only each capture
 * method's rolling `recent_data_store.stored_hours` window (migration 0011: rows copied on write by a
 * statement trigger, the view hides expired ones). Isolation is the view's; the added literal
 * organization condition lets the planner use that organization's partial custom indexes.
 */
export function hotStorageSource(organizationId?: string): MqlSource {
  const source = readingsSource('sensordata.hot_readings', null);
  if (organizationId === undefined) return source;
  return { ...source, where: `src.organization_uuid = ${quoteText(organizationId)}::uuid` };
}

/** Rows deleted by one `expireHotReadings` statement, so no sweep holds locks or bloats WAL for long. */
export const hotExpiryBatch = 5_000;

/**
 * Reclaims expired hot rows (already invisible to queries) in bounded batches, oldest first through the
 * expiry index. Returns how many rows were removed.
 */
export async function expireHotReadings(
  db: Queryable,
  nowMs: number,
  signal: AbortSignal,
  batch = hotExpiryBatch,
): Promise<number> {
  let total = 0;
  for (;;) {
    signal.throwIfAborted();
    const result = await db.query(
      `DELETE FROM hot_readings WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM hot_readings WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2))`,
      [new Date(nowMs), batch],
    );
    total += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < batch) return total;
  }
}
