import type { Database, Queryable } from '../../infra/postgres/database.ts';
import { withTransaction } from '../../infra/postgres/database.ts';
import type { Clock } from '../shared/clock.ts';
import { newUuid } from '../shared/ids.ts';
import { lockDuePipelines, type RunReason, updatePipelineFields } from './pipeline-repository.ts';
import { captureLatencyMarginMs, parseSchedule, planWindows } from './pipeline-schedule.ts';

/**
 * One scheduling pass over all pipelines (every replica runs passes; rows are locked with SKIP LOCKED and a
 * window has at most one pending run — a unique index — so replicas never double-schedule):
 *
 * 1. Plan: for each enabled pipeline, the windows closed since its `planned_until` (missed ones too, and
 *    backfill windows in batches) become SCHEDULED runs, each enqueued as a job in the same transaction
 *    to start `runDelayMs` after its window closes (late uploads have time to arrive).
 * 2. Time out: a run STARTED longer than `staleRunAfterMs` ago (its replica died) is FAILED, to be retried.
 * 3. Retry: a run that FAILED for a reason that may pass (marked `retry_pending`: stale, an internal error,
 *    no query slot in time, its time budget) has its window scheduled again (reason `retry`, `attempt` + 1)
 *    once `retryBackoffMs · 2^(attempt − 1)` have passed since it ended; after `maxAttemptsPerWindow`
 *    attempts the window stays FAILED with the last message (which then says so). A disabled pipeline's
 *    retries wait until it is enabled again.
 * 4. Late data: a COMPLETED window of the last `lateDataLookbackMs` into which readings were uploaded
 *    after the run started is scheduled again (reason `late-data`); its output replaces the old one.
 */

export interface PipelineSchedulerSettings {
  runDelayMs: number;
  staleRunAfterMs: number;
  maxWindowsPerPass: number;
  maxPipelinesPerPass: number;
  maxAttemptsPerWindow: number;
  /** Wait before the first retry of a failed window; doubled for each further attempt. */
  retryBackoffMs: number;
  lateDataLookbackMs: number;
}

export const defaultPipelineSchedulerSettings: PipelineSchedulerSettings = {
  runDelayMs: 60_000,
  staleRunAfterMs: 10 * 60_000,
  maxWindowsPerPass: 10,
  maxPipelinesPerPass: 500,
  maxAttemptsPerWindow: 3,
  retryBackoffMs: 60_000,
  lateDataLookbackMs: 24 * 3_600_000,
};

/** Enqueues the job that executes run `runId` not before `runAtMs`, in the caller's transaction. */
export type EnqueueRun = (tx: Queryable, runId: string, runAtMs: number) => Promise<void>;

export interface PipelineSchedulerDeps {
  db: Database;
  clock: Clock;
  schedulerSettings: PipelineSchedulerSettings;
  enqueueRun: EnqueueRun;
}

export interface PassResult {
  scheduled: number;
  timedOut: number;
  /** Failed windows scheduled again. */
  retried: number;
  /** Failed windows left FAILED: out of attempts. */
  givenUp: number;
  lateData: number;
}

/** Each step is its own short transaction; `signal` is checked between them. */
export async function runSchedulerPass(
  deps: PipelineSchedulerDeps,
  signal: AbortSignal,
): Promise<PassResult> {
  signal.throwIfAborted();
  const timedOut = await failStaleRuns(deps);
  signal.throwIfAborted();
  const { retried, givenUp } = await retryFailedRuns(deps);
  signal.throwIfAborted();
  const scheduled = await planDueWindows(deps);
  signal.throwIfAborted();
  const lateData = await rescheduleLateData(deps);
  return { scheduled, timedOut, retried, givenUp, lateData };
}

async function insertRun(
  tx: Queryable,
  deps: PipelineSchedulerDeps,
  run: {
    organizationId: string;
    pipelineId: string;
    startMs: number;
    endMs: number;
    reason: RunReason;
    attempt?: number;
  },
): Promise<boolean> {
  const id = newUuid();
  const nowMs = deps.clock.nowMs();
  const inserted = await tx.query(
    `INSERT INTO data_pipeline_runs (id, organization_id, pipeline_id, data_start, data_end, status, reason, scheduled_at, attempt)
     VALUES ($1, $2, $3, $4, $5, 'scheduled', $6, $7, $8)
     ON CONFLICT (pipeline_id, data_start) WHERE status IN ('scheduled', 'started') DO NOTHING`,
    [
      id,
      run.organizationId,
      run.pipelineId,
      new Date(run.startMs),
      new Date(run.endMs),
      run.reason,
      new Date(nowMs),
      run.attempt ?? 1,
    ],
  );
  if (inserted.rowCount === 0) return false;
  await deps.enqueueRun(tx, id, Math.max(nowMs, run.endMs + deps.schedulerSettings.runDelayMs));
  return true;
}

async function planDueWindows(deps: PipelineSchedulerDeps): Promise<number> {
  const settings = deps.schedulerSettings;
  return withTransaction(deps.db, async (tx) => {
    const nowMs = deps.clock.nowMs();
    let scheduled = 0;
    for (const pipeline of await lockDuePipelines(tx, settings.maxPipelinesPerPass)) {
      const plan = planWindows({
        schedule: parseSchedule(pipeline.schedule),
        plannedUntilMs: pipeline.plannedUntilMs,
        createdAtMs: pipeline.createdAtMs,
        nowMs,
        maxWindows: settings.maxWindowsPerPass,
      });
      if (plan.windows.length === 0) continue;
      for (const window of plan.windows) {
        const reason = window.reason;
        if (
          await insertRun(tx, deps, {
            ...window,
            reason,
            organizationId: pipeline.organizationId,
            pipelineId: pipeline.id,
          })
        ) {
          scheduled++;
        }
      }
      await updatePipelineFields(tx, pipeline.id, { plannedUntilMs: plan.plannedUntilMs });
    }
    return scheduled;
  });
}

async function failStaleRuns(deps: PipelineSchedulerDeps): Promise<number> {
  const settings = deps.schedulerSettings;
  const nowMs = deps.clock.nowMs();
  const stale = await deps.db.query(
    `UPDATE data_pipeline_runs SET status = 'failed', ended_at = $1, retry_pending = true,
       error_message = 'the run did not finish within ' || $3::text || ' ms (its cloud replica stopped?)'
     WHERE id IN (SELECT id FROM data_pipeline_runs WHERE status = 'started' AND started_at < $2
                  FOR UPDATE SKIP LOCKED)`,
    [new Date(nowMs), new Date(nowMs - settings.staleRunAfterMs), String(settings.staleRunAfterMs)],
  );
  return stale.rowCount ?? 0;
}

/**
 * Failed runs marked `retry_pending` whose backoff has passed get their window scheduled again with the
 * next attempt number; those at `maxAttemptsPerWindow` are given up at once. Either way the failed run's
 * message says what happened next, and `retry_pending` is cleared (the partial index stays small).
 */
async function retryFailedRuns(deps: PipelineSchedulerDeps): Promise<{ retried: number; givenUp: number }> {
  const settings = deps.schedulerSettings;
  return withTransaction(deps.db, async (tx) => {
    const nowMs = deps.clock.nowMs();
    const due = await tx.query<{
      organization_id: string;
      pipeline_id: string;
      data_start: Date;
      data_end: Date;
      attempt: number;
    }>(
      `UPDATE data_pipeline_runs SET retry_pending = false,
         error_message = error_message || ' (attempt ' || attempt || ' of ' || $2::int
           || CASE WHEN attempt >= $2::int THEN '; not retried)' ELSE '; the window is scheduled again)' END
       WHERE id IN (SELECT id FROM data_pipeline_runs
                    WHERE retry_pending AND status = 'failed'
                      AND EXISTS (SELECT 1 FROM data_pipelines p WHERE p.id = pipeline_id AND p.enabled)
                      AND (attempt >= $2::int
                           OR ended_at <= $1::timestamptz - $3::double precision * power(2, attempt - 1) * interval '1 millisecond')
                    ORDER BY ended_at LIMIT $4 FOR UPDATE SKIP LOCKED)
       RETURNING organization_id, pipeline_id, data_start, data_end, attempt`,
      [new Date(nowMs), settings.maxAttemptsPerWindow, settings.retryBackoffMs, settings.maxPipelinesPerPass],
    );
    let retried = 0;
    let givenUp = 0;
    for (const run of due.rows) {
      if (run.attempt >= settings.maxAttemptsPerWindow) {
        givenUp++;
        continue;
      }
      // A window already pending again (late data, a new tick) needs no retry: insertRun does nothing then.
      const scheduled = await insertRun(tx, deps, {
        organizationId: run.organization_id,
        pipelineId: run.pipeline_id,
        startMs: run.data_start.getTime(),
        endMs: run.data_end.getTime(),
        reason: 'retry',
        attempt: run.attempt + 1,
      });
      if (scheduled) retried++;
    }
    return { retried, givenUp };
  });
}

async function rescheduleLateData(deps: PipelineSchedulerDeps): Promise<number> {
  const settings = deps.schedulerSettings;
  return withTransaction(deps.db, async (tx) => {
    const nowMs = deps.clock.nowMs();
    const late = await tx.query<{
      organization_id: string;
      pipeline_id: string;
      data_start: Date;
      data_end: Date;
    }>(
      `SELECT r.organization_id, r.pipeline_id, r.data_start, r.data_end
       FROM data_pipeline_runs r JOIN data_pipelines p ON p.id = r.pipeline_id AND p.enabled
       WHERE r.status = 'completed' AND NOT r.superseded AND r.data_end > $1
         AND NOT EXISTS (SELECT 1 FROM data_pipeline_runs q
                         WHERE q.pipeline_id = r.pipeline_id AND q.data_start = r.data_start
                           AND q.status IN ('scheduled', 'started'))
         AND EXISTS (SELECT 1 FROM readings x
                     WHERE x.organization_id = r.organization_id
                       AND x.captured_at >= r.data_start - $2::interval AND x.captured_at < r.data_end + $2::interval
                       AND x.time_received >= r.data_start AND x.time_received < r.data_end
                       AND x.synced_at > r.started_at)
       LIMIT $3`,
      [
        new Date(nowMs - settings.lateDataLookbackMs),
        `${captureLatencyMarginMs} milliseconds`,
        settings.maxPipelinesPerPass,
      ],
    );
    let count = 0;
    for (const run of late.rows) {
      const scheduled = await insertRun(tx, deps, {
        organizationId: run.organization_id,
        pipelineId: run.pipeline_id,
        startMs: run.data_start.getTime(),
        endMs: run.data_end.getTime(),
        reason: 'late-data',
      });
      if (scheduled) count++;
    }
    return count;
  });
}
