import { type Database, withTransaction } from '../../../infra/postgres/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { lockOverdueDeliveries } from './delivery-repository.ts';
import { enqueueDelivery } from './trigger-delivery-handler.ts';

const batchSize = 500;

/**
 * Re-enqueues open deliveries that are overdue by more than `recoverAfterMs` — their job was lost (a
 * handler that failed on database trouble after graphile-worker's attempts, a job deleted by hand). The job
 * is keyed per delivery with `preserve_run_at`, so a delivery whose keyed job still waits keeps it as it
 * is; an extra run is harmless anyway (the row lock and status make it a no-op or a normal attempt).
 * Returns how many deliveries were enqueued.
 */
export async function recoverOverdueDeliveries(
  db: Database,
  clock: Clock,
  recoverAfterMs: number,
): Promise<number> {
  const cutoff = new Date(clock.nowMs() - recoverAfterMs);
  let total = 0;
  for (;;) {
    const count = await withTransaction(db, async (tx) => {
      const ids = await lockOverdueDeliveries(tx, cutoff, batchSize);
      for (const id of ids) await enqueueDelivery(tx, id, 0, 'preserve_run_at');
      // Bump them out of the overdue set until their new attempt (or the next pass after recoverAfterMs).
      if (ids.length > 0) {
        await tx.query(`UPDATE trigger_deliveries SET next_attempt_at = $2 WHERE id = ANY($1::uuid[])`, [
          ids,
          new Date(clock.nowMs()),
        ]);
      }
      return ids.length;
    });
    total += count;
    if (count < batchSize) return total;
  }
}
