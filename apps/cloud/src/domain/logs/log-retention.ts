import { type Database, withTransaction } from '../../infra/postgres/database.ts';
import type { Clock } from '../shared/clock.ts';
import { logLimits } from './log-entry.ts';
import { type LogPartitions, listLogPartitions } from './log-partitions.ts';

const dayMs = 86_400_000;
// Any constant works; the same on every replica so only one runs the retention at a time.
const retentionLockKey = 7_204_206;

export interface LogRetentionResult {
  dropped: string[];
}

/**
 * Drops every daily log partition whose whole day is older than the retention period (30 days), and
 * creates the partitions of today and tomorrow ahead of the inserts. Rows are never deleted one by one:
 * a log stays readable for at least 30 days and is gone within 31. Runs under an advisory lock, so with
 * several replicas only one does the work; the clock is injected.
 */
export async function applyLogRetention(
  db: Database,
  clock: Clock,
  partitions: LogPartitions,
): Promise<LogRetentionResult> {
  const nowMs = clock.nowMs();
  await partitions.ensure(nowMs);
  await partitions.ensure(nowMs + dayMs);
  const cutoffMs = nowMs - logLimits.retentionDays * dayMs;
  const dropped = await withTransaction(db, async (tx) => {
    const lock = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
      retentionLockKey,
    ]);
    if (!lock.rows[0]?.locked) return [];
    const names: string[] = [];
    for (const partition of await listLogPartitions(tx)) {
      // The partition holds [day, day + 1 day): expired when its newest possible entry is past the cutoff.
      if (partition.dayMs + dayMs <= cutoffMs) {
        await tx.query(`DROP TABLE ${partition.name}`);
        names.push(partition.name);
      }
    }
    return names;
  });
  if (dropped.length > 0) partitions.forget();
  return { dropped };
}
