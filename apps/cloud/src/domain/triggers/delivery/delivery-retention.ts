import type { Database } from '../../../infra/postgres/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { deleteDeliveriesBefore } from './delivery-repository.ts';

const dayMs = 86_400_000;
// Any constant works; the same on every replica so only one runs the retention at a time.
const retentionLockKey = 7_205_005;
const batchSize = 5_000;

/**
 * Deletes deliveries (with their attempts) created more than `retentionDays` ago, across every
 * organization, in batches so no statement holds many rows. Runs under an advisory lock, so with several
 * replicas only one does the work; the clock is injected. Returns how many deliveries were deleted.
 */
export async function applyDeliveryRetention(
  db: Database,
  clock: Clock,
  retentionDays: number,
): Promise<number> {
  const cutoff = new Date(clock.nowMs() - retentionDays * dayMs);
  const client = await db.connect();
  try {
    const lock = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      retentionLockKey,
    ]);
    if (!lock.rows[0]?.locked) return 0;
    try {
      let deleted = 0;
      for (;;) {
        const count = await deleteDeliveriesBefore(client, cutoff, batchSize);
        deleted += count;
        if (count < batchSize) return deleted;
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [retentionLockKey]);
    }
  } finally {
    client.release();
  }
}
