import type pg from 'pg';
import { materializeAllReadingRollups } from '../../apps/cloud/src/domain/data/rollups/reading-rollup-materializer.ts';
import type { Database } from '../../apps/cloud/src/infra/postgres/database.ts';

/**
 * Recomputes every dirty rollup bucket until no mark is left (the cloud's own job may take passes too:
 * both serialize on the materializer's lock). Returns the milliseconds it took. Benchmarks call it after a
 * bulk load so the cloud is in its steady state and the materializer does not compete with timed runs.
 */
export async function materializeEveryBucket(db: Database, pool: pg.Pool): Promise<number> {
  const began = performance.now();
  for (;;) {
    await materializeAllReadingRollups(db, AbortSignal.timeout(600_000), { maxBuckets: 1000 });
    const left = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM reading_rollup_marks');
    if (left.rows[0]?.n === 0) return performance.now() - began;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
