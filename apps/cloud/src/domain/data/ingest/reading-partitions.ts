import type { Queryable } from '../../../infra/postgres/database.ts';

/**
 * `readings` is range-partitioned by month of `captured_at` (UTC). Partitions are created on demand by
 * the ingest path: `readings_y2025m03` holds [2025-03-01, 2025-04-01). Creation is idempotent and
 * race-safe across replicas; months known to exist are cached per process.
 */

const knownPartitions = new WeakMap<object, Set<number>>();

/** The month index (years × 12 + month) of an epoch-milliseconds instant, in UTC. */
export function monthIndexOf(epochMs: number): number {
  const date = new Date(epochMs);
  return date.getUTCFullYear() * 12 + date.getUTCMonth();
}

export function partitionNameOf(monthIndex: number): string {
  const year = Math.floor(monthIndex / 12);
  const month = (monthIndex % 12) + 1;
  return `readings_y${year}m${String(month).padStart(2, '0')}`;
}

/** The first instant (epoch milliseconds, UTC) of a month index. */
export function monthStartMs(monthIndex: number): number {
  return Date.UTC(Math.floor(monthIndex / 12), monthIndex % 12, 1);
}

function monthStartIso(monthIndex: number): string {
  return new Date(monthStartMs(monthIndex)).toISOString();
}

// 42P07 duplicate_table, 23505 unique_violation (pg_type race), 42P17 overlap with an existing partition.
const alreadyThere = new Set(['42P07', '23505', '42P17']);

/** Makes sure a partition exists for every month index given. */
export async function ensureReadingPartitions(db: Queryable, monthIndexes: Iterable<number>): Promise<void> {
  let known = knownPartitions.get(db);
  if (!known) {
    known = new Set();
    knownPartitions.set(db, known);
  }
  for (const monthIndex of monthIndexes) {
    if (known.has(monthIndex)) continue;
    const name = partitionNameOf(monthIndex);
    try {
      await db.query(
        `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF readings
         FOR VALUES FROM ('${monthStartIso(monthIndex)}') TO ('${monthStartIso(monthIndex + 1)}')`,
      );
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (!code || !alreadyThere.has(code)) throw error;
    }
    known.add(monthIndex);
  }
}

/** Forgets cached partitions (after partitions were dropped, e.g. by retention). */
export function forgetReadingPartitions(db: Queryable): void {
  knownPartitions.delete(db);
}
