import { addJob, type JobQueue } from '../../infra/jobs/job-queue.ts';
import { isUuid } from '../validate.ts';
import { executePipelineRun, type PipelineRunDeps } from './pipeline-runner.ts';
import type { EnqueueRun } from './pipeline-scheduler.ts';

/**
 * Pipeline runs on the Postgres job queue (infra/jobs/job-queue.ts). The scheduler pass enqueues one
 * `pipeline-run` job per SCHEDULED run in the transaction that inserts the run, so a run exists iff its job
 * does; any replica's worker may take it. Exactly-once per window does not depend on the queue: the
 * runner claims the run row (SCHEDULED → STARTED) atomically, so a duplicate or retried job is a no-op.
 */

export const pipelineRunJob = 'pipeline-run';

export const enqueuePipelineRun: EnqueueRun = async (tx, runId, runAtMs) => {
  await addJob(
    tx,
    pipelineRunJob,
    { runId },
    { jobKey: `${pipelineRunJob}:${runId}`, runAt: new Date(runAtMs) },
  );
};

export interface PipelineRunHandlerOptions {
  /**
   * Runs executing at once in this process. The job workers are shared with other work (trigger
   * deliveries): a job beyond this is put back for `deferMs` instead of holding a worker while it waits.
   */
  maxConcurrentRuns: number;
  deferMs?: number;
  onError: (message: string) => void;
}

/**
 * Registers the `pipeline-run` handler (before `queue.start()`). A malformed payload is reported and
 * dropped (retrying cannot fix it); an error thrown by the runner (the cloud stopping, the database gone)
 * makes the queue retry the job later — the run row decides whether there is anything left to do.
 */
export function registerPipelineRunHandler(
  queue: JobQueue,
  deps: PipelineRunDeps,
  options: PipelineRunHandlerOptions,
): void {
  let active = 0;
  queue.register(pipelineRunJob, async (payload, context) => {
    const runId = (payload as { runId?: unknown } | null)?.runId;
    if (typeof runId !== 'string' || !isUuid(runId)) {
      options.onError(
        `${pipelineRunJob} job ${context.jobId}: payload.runId must be a run ID (a UUID); job dropped`,
      );
      return;
    }
    const id = runId.toLowerCase();
    if (active >= options.maxConcurrentRuns) {
      // The job ends now; an identical one (same key) waits in the queue for any replica.
      await enqueuePipelineRun(deps.db, id, deps.clock.nowMs() + (options.deferMs ?? 1_000));
      return;
    }
    active += 1;
    try {
      await executePipelineRun(deps, id, context.signal);
    } finally {
      active -= 1;
    }
  });
}
