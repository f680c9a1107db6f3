import type { DatabaseClient } from './database.ts';

/**
 * Session advisory locks on a checked-out client (held across statements and transactions, unlike
 * `pg_try_advisory_xact_lock`). Always try, never wait: a statement blocked on a lock holds a snapshot,
 * which CREATE INDEX CONCURRENTLY and other snapshot waiters would then wait for.
 */

export async function tryAdvisoryLock(client: DatabaseClient, key: number): Promise<boolean> {
  const result = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [key]);
  return result.rows[0]?.locked === true;
}

/** Unlocks (when `locked`) and returns the client; a client whose unlock failed is closed, freeing the lock. */
export async function releaseWithAdvisoryLock(
  client: DatabaseClient,
  key: number,
  locked: boolean,
): Promise<void> {
  const unlocked =
    !locked ||
    (await client.query('SELECT pg_advisory_unlock($1)', [key]).then(
      () => true,
      () => false,
    ));
  client.release(!unlocked);
}
