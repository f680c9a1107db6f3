import { Logger, type LogLevel, type Runner, run, runMigrations, type TaskList } from 'graphile-worker';
import pg from 'pg';
import type { Queryable } from '../postgres/database.ts';

/**
 * The Postgres-backed job queue (graphile-worker, in its own `graphile_worker` schema).
 *
 * - Enqueue with `addJob(tx, name, payload, options)` INSIDE the transaction that records the cause (an
 *   upload, a log batch, a status change, a pipeline run request): the job exists iff the cause committed,
 *   so a crash between commit and work still runs it, and every replica shares the queue (each job runs
 *   once at a time; graphile-worker locks it with SKIP LOCKED).
 * - Register a handler per job name with `queue.register(name, handler)` BEFORE `queue.start()` (every
 *   replica registers the same names). A handler that throws is retried by graphile-worker with its own
 *   exponential backoff up to `maxAttempts` (default 25); handlers that want their own retry policy
 *   (e.g. webhook deliveries honouring Retry-After) catch, re-enqueue with `runAt`, and return.
 * - `stop()` is graceful: no new jobs are taken, running handlers see `signal` abort after
 *   `gracefulShutdownAbortTimeout` and their jobs are unlocked for another replica or the next start.
 */
export interface JobQueue {
  register(name: string, handler: JobHandler): void;
  /** Installs/upgrades the `graphile_worker` schema (idempotent, safe across replicas) and starts workers. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface JobContext {
  jobId: string;
  /** 1 on the first run of this job row, 2 after one graphile-worker retry, ... */
  attempt: number;
  maxAttempts: number;
  /** Aborted when the queue stops; handlers pass it to their I/O. */
  signal: AbortSignal;
}

export type JobHandler = (payload: unknown, context: JobContext) => Promise<void>;

export interface AddJobOptions {
  /** Not before this time (default: now). */
  runAt?: Date;
  /**
   * Not before this many milliseconds from now by the DATABASE clock (ignored when `runAt` is given):
   * delays stay right when the caller's injected clock differs from the database's.
   */
  runAfterMs?: number;
  /** A job with the same key replaces a pending one (graphile-worker `job_key`, mode `replace`). */
  jobKey?: string;
  /** `preserve_run_at`: an existing pending job with the key keeps its run_at (default `replace`). */
  jobKeyMode?: 'replace' | 'preserve_run_at';
  /** Runs of this job row before it is left failed (default 25). */
  maxAttempts?: number;
  /** Jobs in one named queue run one after another. */
  queueName?: string;
  priority?: number;
}

/**
 * Enqueues a job with the given client. Pass the client of your open transaction so the job commits (or
 * rolls back) with your work. Returns the job id. The schema exists once any JobQueue of this database
 * has started (the cloud starts its queue before serving).
 */
export async function addJob(
  tx: Queryable,
  name: string,
  payload: unknown,
  options: AddJobOptions = {},
): Promise<string> {
  const result = await tx.query<{ id: string }>(
    `SELECT (graphile_worker.add_job(
       identifier => $1::text, payload => $2::json, queue_name => $3::text,
       run_at => coalesce($4::timestamptz, clock_timestamp() + $8::double precision * interval '1 millisecond'),
       max_attempts => $5::int, job_key => $6::text, priority => $7::int,
       job_key_mode => coalesce($9::text, 'replace'))).id::text AS id`,
    [
      name,
      JSON.stringify(payload ?? {}),
      options.queueName ?? null,
      options.runAt ?? null,
      options.maxAttempts ?? null,
      options.jobKey ?? null,
      options.priority ?? null,
      options.runAfterMs ?? null,
      options.jobKeyMode ?? null,
    ],
  );
  return result.rows[0]?.id as string;
}

export interface JobQueueOptions {
  connectionString: string;
  /** Jobs run at once by this process (default 8). */
  concurrency?: number;
  /** Fallback poll for future/retried jobs in ms (new jobs are picked up at once via LISTEN). Default 1000. */
  pollIntervalMs?: number;
  /** After stop(), running handlers' signals abort after this long (default 5000 ms). */
  shutdownAbortMs?: number;
  onError?: (message: string, error?: unknown) => void;
}

export function createJobQueue(options: JobQueueOptions): JobQueue {
  const handlers = new Map<string, JobHandler>();
  let runner: Runner | undefined;
  let pool: pg.Pool | undefined;
  const concurrency = options.concurrency ?? 8;
  const logger = new Logger(() => (level: LogLevel, message: string, meta?: unknown) => {
    if (level === 'error' || level === 'warning') options.onError?.(`job queue: ${message}`, meta);
  });
  return {
    register(name, handler) {
      if (runner) throw new Error(`job handler "${name}" registered after the queue started`);
      if (handlers.has(name)) throw new Error(`job handler "${name}" is registered twice`);
      handlers.set(name, handler);
    },
    async start() {
      if (runner) return;
      // Our own pool, so its connections have error handlers (a database restart or drop must not crash the
      // process) and stop() ends every connection the queue opened.
      pool = new pg.Pool({ connectionString: options.connectionString, max: concurrency + 2 });
      const current = pool;
      // After stop(), clients still closing (pool.end() does not wait for them) may see the database go.
      const report = (error: Error) => {
        if (pool === current) options.onError?.(`job queue: database connection lost: ${error.message}`);
      };
      pool.on('error', report);
      // A connection that fails while checked out emits on the client, not the pool: without a listener
      // that would be an uncaught error.
      pool.on('connect', (client) => client.on('error', report));
      const common = { pgPool: pool, logger };
      await runMigrations(common);
      const taskList: TaskList = {};
      for (const [name, handler] of handlers) {
        taskList[name] = async (payload, helpers) => {
          await handler(payload, {
            jobId: String(helpers.job.id),
            attempt: helpers.job.attempts,
            maxAttempts: helpers.job.max_attempts,
            signal: helpers.abortSignal,
          });
        };
      }
      runner = await run({
        ...common,
        taskList,
        concurrency,
        noHandleSignals: true,
        pollInterval: options.pollIntervalMs ?? 1000,
        gracefulShutdownAbortTimeout: options.shutdownAbortMs ?? 5000,
      });
    },
    async stop() {
      const current = runner;
      runner = undefined;
      if (current) await current.stop();
      await pool?.end();
      pool = undefined;
    },
  };
}
