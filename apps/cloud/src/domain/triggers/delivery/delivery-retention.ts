import type { Database } from '../../../infra/postgres/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { maxSecondsBetweenNotifications } from '../trigger-config.ts';
import { deleteRateLimitsBefore } from '../trigger-rate-limit.ts';
import { deleteDeliveriesBefore } from './delivery-repository.ts';

const dayMs = 86_400_000;
// Any constant works; the same on every replica so only one runs the retention at a time.
const retentionLockKey = 7_205_005;
const batchSize = 5_000;

export interface RetentionResult {
  deliveries: number;
  rateLimits: number;
}

/**
 * Deletes deliveries (with their attempts) created more than `retentionDays` ago, and rate-limit rows
 * last recorded more than the largest `seconds_between_notifications` ago (they limit nothing any more),
 * across every organization, in batches so no statement holds many rows. Runs under an advisory lock, so
 * with several replicas only one does the work; the clock is injected. Returns how many rows went.
 */
export async function applyDeliveryRetention(
  db: Database,
  clock: Clock,
  retentionDays: number,
): Promise<RetentionResult> {
  const cutoff = new Date(clock.nowMs() - retentionDays * dayMs);
  const rateLimitCutoff = new Date(clock.nowMs() - maxSecondsBetweenNotifications * 1000);
  const client = await db.connect();
  try {
    const lock = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      retentionLockKey,
    ]);
    if (!lock.rows[0]?.locked) return { deliveries: 0, rateLimits: 0 };
    try {
      return {
        deliveries: await inBatches((limit) => deleteDeliveriesBefore(client, cutoff, limit)),
        rateLimits: await inBatches((limit) => deleteRateLimitsBefore(client, rateLimitCutoff, limit)),
      };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [retentionLockKey]);
    }
  } finally {
    client.release();
  }
}

async function inBatches(deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  let deleted = 0;
  for (;;) {
    const count = await deleteBatch(batchSize);
    deleted += count;
    if (count < batchSize) return deleted;
  }
}
