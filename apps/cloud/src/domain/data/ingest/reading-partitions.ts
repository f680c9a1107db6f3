import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable } from '../../../infra/postgres/database.ts';
import { DomainError } from '../../errors.ts';

/**
 * `readings` is range-partitioned by month of `captured_at` (UTC). Partitions are created on demand by
 * the ingest path: `readings_y2025m03` holds [2025-03-01, 2025-04-01). Creation is idempotent and
 * race-safe across replicas; months known to exist are cached per process.
 *
 * `CREATE TABLE … PARTITION OF readings` needs an ACCESS EXCLUSIVE lock on `readings`. Any session reading
 * it in an open transaction (a BI database user; the watchdog ends those only after ~75 s) makes the DDL
 * wait, and while it waits in the lock queue every other statement on `readings` — every organization's
 * ingest and queries — waits behind it. So the DDL runs with a short transaction-local `lock_timeout`
 * (`set_config(…, true)`, i.e. SET LOCAL, in one statement: given the pool, that statement is its own
 * transaction), is retried a few times with backoff, and then gives up with Unavailable: the upload is not
 * acknowledged (nothing of it was stored), and the machine's syncer sends it again later.
 */

export interface PartitionOptions {
  /** Longest wait for the lock on `readings` per attempt (`lock_timeout`). */
  lockTimeoutMs?: number;
  /** Attempts before answering Unavailable. */
  attempts?: number;
  /** Pause after the first failed attempt; doubled after each further one. */
  backoffMs?: number;
  signal?: AbortSignal;
}

export const defaultPartitionLockTimeoutMs = 1000;
const defaultAttempts = 3;
const defaultBackoffMs = 250;

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

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function monthStartIso(monthIndex: number): string {
  return new Date(monthStartMs(monthIndex)).toISOString();
}

// 42P07 duplicate_table, 23505 unique_violation (pg_type race), 42P17 overlap with an existing partition.
const alreadyThere = new Set(['42P07', '23505', '42P17']);

/**
 * Makes sure a partition exists for every month index given. Throws DomainError Unavailable when another
 * session kept `readings` locked through every attempt.
 */
export async function ensureReadingPartitions(
  db: Queryable,
  monthIndexes: Iterable<number>,
  options: PartitionOptions = {},
): Promise<void> {
  let known = knownPartitions.get(db);
  if (!known) {
    known = new Set();
    knownPartitions.set(db, known);
  }
  for (const monthIndex of monthIndexes) {
    if (known.has(monthIndex)) continue;
    await createPartition(db, monthIndex, options);
    known.add(monthIndex);
  }
}

// 55P03 lock_not_available: lock_timeout expired.
const lockNotAvailable = '55P03';

async function createPartition(db: Queryable, monthIndex: number, options: PartitionOptions): Promise<void> {
  const lockTimeoutMs = options.lockTimeoutMs ?? defaultPartitionLockTimeoutMs;
  const attempts = options.attempts ?? defaultAttempts;
  const name = partitionNameOf(monthIndex);
  const ddl = `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF readings
    FOR VALUES FROM ('${monthStartIso(monthIndex)}') TO ('${monthStartIso(monthIndex + 1)}')`;
  // One statement: the DDL runs under the short lock_timeout, and the previous value is back afterwards
  // (should the caller pass a client inside its own transaction).
  const statement = `DO $ddl$
    DECLARE previous text := current_setting('lock_timeout');
    BEGIN
      PERFORM set_config('lock_timeout', '${Math.max(1, Math.round(lockTimeoutMs))}ms', true);
      EXECUTE ${quoteLiteral(ddl)};
      PERFORM set_config('lock_timeout', previous, true);
    END $ddl$`;
  let backoffMs = options.backoffMs ?? defaultBackoffMs;
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      await db.query(statement);
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code && alreadyThere.has(code)) return;
      if (code !== lockNotAvailable) throw error;
      if (attempt >= attempts) {
        throw new DomainError(
          'Unavailable',
          `creating month partition ${name} of readings: another session held a lock on readings through ` +
            `${attempts} attempts of lock_timeout ${lockTimeoutMs} ms; nothing of this upload was stored, retry it`,
          { cause: error },
        );
      }
    }
    await sleep(backoffMs, undefined, { signal: options.signal });
    backoffMs *= 2;
  }
}

/** Forgets cached partitions (after partitions were dropped, e.g. by retention). */
export function forgetReadingPartitions(db: Queryable): void {
  knownPartitions.delete(db);
}
