import type { Database } from '../../../infra/postgres/database.ts';
import { releaseWithAdvisoryLock, tryAdvisoryLock } from '../../../infra/postgres/session-lock.ts';
import type { Clock } from '../../shared/clock.ts';
import { expireHotReadings } from './hot-storage-source.ts';

/**
 * The background task that reclaims expired hot-storage rows (`expireHotReadings`). Every replica runs
 * the timer; a session advisory lock (tried, never waited for) lets one of them do a pass at a time, the
 * others skip it. The pass deletes rows whose `expires_at` (capture time + the capture method's
 * `recent_data_store.stored_hours`) is at or before the injected clock's now.
 */

// Any constant works; the same on every replica.
const expiryLockKey = 7_204_312;

export interface HotStorageExpiry {
  /** One pass now: rows removed, or undefined when another replica holds the pass. */
  runOnce(signal: AbortSignal): Promise<number | undefined>;
  /** Starts the timer (every `intervalMs`). */
  start(): void;
  /** Stops the timer and waits for a running pass (aborted). */
  stop(): Promise<void>;
}

export function createHotStorageExpiry(options: {
  db: Database;
  clock: Clock;
  intervalMs: number;
  onError: (error: unknown) => void;
}): HotStorageExpiry {
  const { db, clock } = options;
  const closing = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  async function runOnce(signal: AbortSignal): Promise<number | undefined> {
    const client = await db.connect();
    let locked = false;
    try {
      locked = await tryAdvisoryLock(client, expiryLockKey);
      if (!locked) return undefined;
      return await expireHotReadings(client, clock.nowMs(), signal);
    } finally {
      await releaseWithAdvisoryLock(client, expiryLockKey, locked);
    }
  }

  return {
    runOnce,
    start() {
      if (timer) return;
      timer = setInterval(() => {
        if (running) return;
        running = runOnce(closing.signal)
          .catch((error) => {
            if (!closing.signal.aborted) options.onError(error);
          })
          .finally(() => {
            running = undefined;
          });
      }, options.intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      closing.abort();
      await running;
    },
  };
}
