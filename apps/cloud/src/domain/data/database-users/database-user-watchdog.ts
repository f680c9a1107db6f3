import type { Queryable } from '../../../infra/postgres/database.ts';

/**
 * Ends database-user sessions (ConfigureDatabaseUser's BI logins) that hold `readings` too long, whatever
 * they SET: a statement running longer than the role's statement timeout, or a transaction left idle longer
 * than its idle timeout (database-users.ts sets both as role defaults, which the user may change). Such a
 * session keeps its lock on `readings`, so creating the next month's partition (ingest for every
 * organization) would wait for it, with every later statement on `readings` queued behind. Every replica
 * may run it; terminating a backend twice is harmless. The cloud's role needs to be a superuser or a member
 * of `pg_signal_backend` (embedded PostgreSQL: superuser).
 */

export interface DatabaseUserWatchdogLimits {
  maxStatementMs: number;
  maxIdleInTransactionMs: number;
}

/** A little above the role defaults (60 s each), so the role's own timeouts act first. */
export const defaultWatchdogLimits: DatabaseUserWatchdogLimits = {
  maxStatementMs: 75_000,
  maxIdleInTransactionMs: 75_000,
};

/** Terminates the overdue database-user sessions of this database; returns how many. */
export async function endOverdueDatabaseUserSessions(
  db: Queryable,
  limits: DatabaseUserWatchdogLimits = defaultWatchdogLimits,
): Promise<number> {
  const result = await db.query<{ ended: boolean }>(
    `SELECT pg_terminate_backend(a.pid) AS ended
       FROM pg_stat_activity a
       JOIN mcloud_private.database_users u ON u.role_name = a.usename
      WHERE a.datname = current_database()
        AND ((a.state = 'active' AND a.query_start < now() - $1 * interval '1 millisecond')
          OR (a.state IN ('idle in transaction', 'idle in transaction (aborted)')
              AND a.state_change < now() - $2 * interval '1 millisecond'))`,
    [limits.maxStatementMs, limits.maxIdleInTransactionMs],
  );
  return result.rows.filter((row) => row.ended).length;
}

export interface DatabaseUserWatchdog {
  start(): void;
  stop(): Promise<void>;
}

export function createDatabaseUserWatchdog(options: {
  db: Queryable;
  intervalMs: number;
  limits?: DatabaseUserWatchdogLimits;
  onError: (error: unknown) => void;
}): DatabaseUserWatchdog {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;
  return {
    start() {
      if (timer || options.intervalMs <= 0) return;
      timer = setInterval(() => {
        if (running) return;
        running = endOverdueDatabaseUserSessions(options.db, options.limits)
          .catch((error) => {
            if (!stopped) options.onError(error);
          })
          .finally(() => {
            running = undefined;
          });
      }, options.intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
