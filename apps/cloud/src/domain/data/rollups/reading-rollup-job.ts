import { addJob, type JobQueue } from '../../../infra/jobs/job-queue.ts';
import type { Database, Queryable } from '../../../infra/postgres/database.ts';
import { materializeAllReadingRollups } from './reading-rollup-materializer.ts';

/**
 * The materializer on the job queue: one job (job key `reading-rollups`, its own named queue, so at most
 * one runs at a time across replicas — the materializer's advisory lock makes that hold anyway) recomputes
 * dirty buckets for up to `budgetMs`, then schedules its next run `intervalMs` later (also after a failure,
 * which it reports). Every replica enqueues
 * it at start (the key keeps one pending job), so the chain survives restarts; a failed run is retried by
 * the queue. Queries are exact whether or not it runs: it only moves work from query time to here.
 */

export const readingRollupJob = 'reading-rollups';

export interface ReadingRollupJobOptions {
  /** Pause between runs (default 10 s). */
  intervalMs?: number;
  /** Longest a run keeps recomputing before it yields the worker (default 30 s). */
  budgetMs?: number;
  /** A bucket is recomputed once its newest mark is this old (default 60 s; see MaterializeOptions). */
  settleMs?: number;
  onError?: (error: unknown) => void;
}

export async function enqueueReadingRollups(db: Queryable, runAfterMs = 0): Promise<void> {
  await addJob(
    db,
    readingRollupJob,
    {},
    { jobKey: readingRollupJob, jobKeyMode: 'preserve_run_at', queueName: readingRollupJob, runAfterMs },
  );
}

export function registerReadingRollupJob(
  queue: JobQueue,
  db: Database,
  options: ReadingRollupJobOptions = {},
): void {
  const intervalMs = options.intervalMs ?? 10_000;
  queue.register(readingRollupJob, async (_payload, context) => {
    try {
      await materializeAllReadingRollups(db, context.signal, {
        budgetMs: options.budgetMs ?? 30_000,
        settleMs: options.settleMs ?? 60_000,
      });
    } catch (error) {
      // Stopping: the queue retries this job later (one chain). Otherwise report and go on with the next run
      // (a retry of this job AND the next run would be two chains).
      if (context.signal.aborted) throw error;
      options.onError?.(error);
    }
    await enqueueReadingRollups(db, intervalMs);
  });
}
