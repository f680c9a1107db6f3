import type { Database, DatabaseClient } from '../../../infra/postgres/database.ts';
import { releaseWithAdvisoryLock, tryAdvisoryLock } from '../../../infra/postgres/session-lock.ts';
import { DomainError } from '../../errors.ts';

/**
 * Custom-index DDL runs one statement at a time across all replicas. CREATE/DROP INDEX CONCURRENTLY waits
 * for every transaction older than its snapshot, including another concurrent build's: two builds at once
 * deadlock (PostgreSQL then cancels one — that was the Internal a second concurrent CreateIndex got).
 *
 * The lock is a session advisory lock taken with `pg_try_advisory_lock` in a polling loop, never a
 * blocking `pg_advisory_lock`: a statement blocked on a lock holds a snapshot, and the running build would
 * wait for it while it waits for the build — a deadlock again. Holding the lock across the whole build
 * also means that, while we hold it, no build is in progress anywhere: an INVALID index or a record
 * without its index is what a crashed build left behind (see custom-indexes.ts).
 */

// Any constant works; the same on every replica.
const indexDdlLockKey = 7_204_311;
const pollIntervalMs = 100;

export interface IndexDdlSession {
  client: DatabaseClient;
  /** Cancels the statement running on `client` (used when the caller's signal aborts). */
  cancel(): Promise<void>;
}

export async function withIndexDdlLock<T>(
  db: Database,
  signal: AbortSignal,
  work: (session: IndexDdlSession) => Promise<T>,
): Promise<T> {
  const client = await db.connect();
  let locked = false;
  try {
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    while (!locked) {
      throwIfCancelled(signal);
      locked = await tryAdvisoryLock(client, indexDdlLockKey);
      if (!locked) await sleep(pollIntervalMs, signal);
    }
    return await work({
      client,
      cancel: async () => {
        await db.query('SELECT pg_cancel_backend($1)', [pid]);
      },
    });
  } finally {
    await releaseWithAdvisoryLock(client, indexDdlLockKey, locked);
  }
}

export function throwIfCancelled(signal: AbortSignal): void {
  if (signal.aborted) {
    throw new DomainError(
      'DeadlineExceeded',
      'index DDL: the call ended while waiting for another index build',
      {
        cause: signal.reason,
      },
    );
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
