import { type Database, withTransaction } from '../../infra/postgres/database.ts';
import { refuseRunOutputArraysUnderUnique } from '../data/indexes/custom-indexes.ts';
import { compilePipeline, type MqlSource, readingsSource } from '../data/mql/mql-compiler.ts';
import { decodeStage } from '../data/mql/mql-values.ts';
import { mqlSourceFor } from '../data/mql/tabular-data-by-mql.ts';
import { runOrganizationQuery } from '../data/query-access/organization-query.ts';
import { DomainError } from '../errors.ts';
import type { Clock } from '../shared/clock.ts';
import { newObjectId } from '../shared/ids.ts';
import type { PipelineDataSource } from './pipeline-repository.ts';
import { captureLatencyMarginMs } from './pipeline-schedule.ts';

/**
 * Executes one pipeline run (one window): claims it (SCHEDULED → STARTED; a run already claimed, finished
 * or deleted is skipped, so a duplicate job does nothing), runs the pipeline's MQL over the organization's
 * documents whose `time_received` lies in `[data_start, data_end)` — as the query role that sees only that
 * organization, within the run time and output caps — and in one transaction replaces the window's
 * previous output (a re-run after late data or a retry) with the new documents, each carrying
 * `_viam_pipeline_run: {id, interval: {start, end}, organization_id}`, and marks the run COMPLETED. Any
 * failure marks it FAILED with the message. If the run was failed meanwhile (it overran and the scheduler
 * re-scheduled its window), the output is discarded.
 */

export interface PipelineRunLimits {
  /** Output documents per run (reference: 10,000); more fails the run and writes nothing (no truncation). */
  maxOutputDocuments: number;
  /** Time budget of the run's query (reference: 5 minutes). */
  runTimeoutMs: number;
  /** Total JSON size of one run's output. */
  maxOutputBytes: number;
  /**
   * Query slots (of the pool's 8 for user queries, query-gate.ts) pipeline runs may hold at once in this
   * process: a backfill never holds more, so interactive TabularDataBySQL/MQL always find the rest.
   */
  querySlots: number;
}

export const defaultPipelineRunLimits: PipelineRunLimits = {
  maxOutputDocuments: 10_000,
  runTimeoutMs: 5 * 60_000,
  maxOutputBytes: 64 * 1024 * 1024,
  querySlots: 2,
};

/** The name of the pipeline runs' share of the query slots. */
export const pipelineQueryShare = 'pipeline-runs';

export interface PipelineRunDeps {
  db: Database;
  clock: Clock;
  runLimits: PipelineRunLimits;
}

export type RunOutcome = 'completed' | 'failed' | 'skipped';

interface ClaimedRun {
  id: string;
  organization_id: string;
  pipeline_id: string;
  data_start: Date;
  data_end: Date;
  stages: Buffer[];
  data_source_type: PipelineDataSource;
}

const isoOf = (date: Date) => date.toISOString();

/**
 * The relation a run reads. STANDARD is `sensordata.pipeline_readings` (migration 0016): the documents of
 * `sensordata.readings` plus `captured_at`, the indexed partition key, so the window can be bounded by it.
 */
function runSource(dataSource: PipelineDataSource): { source: MqlSource; capturedAt: boolean } {
  if (dataSource === 'standard')
    return { source: readingsSource('sensordata.pipeline_readings'), capturedAt: true };
  return { source: mqlSourceFor({ type: dataSource }), capturedAt: false };
}

/**
 * The SQL of the run: the pipeline's stages over the documents whose `time_received` lies in the window.
 * Where the source has it, `captured_at` (the capture time the readings are indexed and partitioned by;
 * it precedes `time_received` by the capture latency) is bounded too, by the window widened by
 * `captureLatencyMarginMs`, so a run reads one window's readings instead of all of them.
 */
export function compileRunQuery(
  stages: readonly Uint8Array[],
  dataSource: PipelineDataSource,
  window: { start: Date; end: Date },
): string {
  const { source, capturedAt } = runSource(dataSource);
  // ISO timestamps from Date objects: safe to inline.
  const between = (column: string, startMs: number, endMs: number) =>
    `${column} >= '${isoOf(new Date(startMs))}'::timestamptz AND ${column} < '${isoOf(new Date(endMs))}'::timestamptz`;
  const startMs = window.start.getTime();
  const endMs = window.end.getTime();
  const conditions = [between('src.time_received', startMs, endMs)];
  if (capturedAt) {
    conditions.push(
      between('src.captured_at', startMs - captureLatencyMarginMs, endMs + captureLatencyMarginMs),
    );
  }
  if (source.where) conditions.unshift(`(${source.where})`);
  const decoded = stages.map((bytes, index) => decodeStage(bytes, index));
  return compilePipeline(decoded, { ...source, where: conditions.join(' AND ') }).sql;
}

export async function executePipelineRun(
  deps: PipelineRunDeps,
  runId: string,
  signal: AbortSignal,
): Promise<RunOutcome> {
  const claimed = await deps.db.query<ClaimedRun>(
    `UPDATE data_pipeline_runs r SET status = 'started', started_at = $2
     FROM data_pipelines p
     WHERE r.id = $1 AND r.status = 'scheduled' AND p.id = r.pipeline_id
     RETURNING r.id, r.organization_id, r.pipeline_id, r.data_start, r.data_end, p.stages, p.data_source_type`,
    [runId, new Date(deps.clock.nowMs())],
  );
  const run = claimed.rows[0];
  if (!run) return 'skipped';
  try {
    const sql = compileRunQuery(
      run.stages.map((stage) => new Uint8Array(stage)),
      run.data_source_type,
      { start: run.data_start, end: run.data_end },
    );
    const limits = deps.runLimits;
    const result = await runOrganizationQuery(
      deps,
      {
        organizationId: run.organization_id,
        sql,
        limits: {
          timeoutMs: limits.runTimeoutMs,
          maxRows: limits.maxOutputDocuments,
          maxBytes: limits.maxOutputBytes,
          share: { name: pipelineQueryShare, max: limits.querySlots },
        },
        rowShape: 'json-text',
      },
      signal,
    );
    const written = await writeOutput(deps, run, result.jsonTexts ?? []);
    return written ? 'completed' : 'skipped';
  } catch (error) {
    // Aborted: by the query layer (DomainError) or by the signal itself (any error once it fired).
    if (signal.aborted || (error instanceof DomainError && error.code === 'Aborted')) {
      // The cloud is stopping: hand the window back so the job's retry (here or on another replica) runs it.
      await deps.db.query(
        `UPDATE data_pipeline_runs SET status = 'scheduled', started_at = NULL WHERE id = $1 AND status = 'started'`,
        [run.id],
      );
      throw error;
    }
    await markFailed(deps, run.id, failureMessage(error, deps.runLimits), isTransient(error));
    return 'failed';
  }
}

/**
 * Whether running the window again may succeed: yes for an internal error (the database restarting, a
 * connection lost), no free query slot in time, or the time budget (load); no for a mistake in the pipeline
 * (InvalidArgument: e.g. $replaceRoot to a non-document), a refused privilege, or output over the caps —
 * the same data gives the same answer.
 */
function isTransient(error: unknown): boolean {
  if (!(error instanceof DomainError)) return true;
  if (error.code === 'ResourceExhausted') return /\bqueries running at once\b/.test(error.message);
  return ['Internal', 'Unavailable', 'DeadlineExceeded'].includes(error.code);
}

/** Why a run failed, for the run record (shown to users by ListDataPipelineRuns). */
function failureMessage(error: unknown, limits: PipelineRunLimits): string {
  if (error instanceof DomainError) {
    if (error.code === 'DeadlineExceeded') {
      return `run time: the pipeline's query did not finish within the limit of ${limits.runTimeoutMs} ms per run`;
    }
    if (error.code === 'ResourceExhausted' && /\brows\b/.test(error.message)) {
      return `output: the run produced more than the limit of ${limits.maxOutputDocuments} documents per run (nothing was written); aggregate further ($group) or narrow the $match`;
    }
    if (error.code === 'ResourceExhausted' && /\bbytes\b/.test(error.message)) {
      return `output: the run produced more than the limit of ${limits.maxOutputBytes} bytes per run (nothing was written); project fewer fields or aggregate further`;
    }
    return error.message;
  }
  return `internal error: ${(error as Error)?.message ?? String(error)}`;
}

/** `transient`: the scheduler retries the window after a backoff (pipeline-scheduler.ts, `retryFailedRuns`). */
async function markFailed(
  deps: PipelineRunDeps,
  runId: string,
  message: string,
  transient: boolean,
): Promise<void> {
  await deps.db.query(
    `UPDATE data_pipeline_runs SET status = 'failed', ended_at = $2, error_message = $3, retry_pending = $4
     WHERE id = $1 AND status = 'started'`,
    [runId, new Date(deps.clock.nowMs()), message.slice(0, 3800), transient],
  );
}

async function writeOutput(
  deps: PipelineRunDeps,
  run: ClaimedRun,
  documents: readonly string[],
): Promise<boolean> {
  const marker = JSON.stringify({
    id: run.id,
    interval: { start: { $date: run.data_start.getTime() }, end: { $date: run.data_end.getTime() } },
    organization_id: run.organization_id,
  });
  const nowMs = deps.clock.nowMs();
  const objectIds = documents.map(() => newObjectId(nowMs));
  return withTransaction(deps.db, async (client) => {
    const finished = await client.query(
      `UPDATE data_pipeline_runs SET status = 'completed', ended_at = $2, output_documents = $3
       WHERE id = $1 AND status = 'started'`,
      [run.id, new Date(nowMs), documents.length],
    );
    if (finished.rowCount === 0) return false;
    // Earlier runs of the same window: their output is replaced by this run's.
    await client.query(
      `WITH earlier AS (
         UPDATE data_pipeline_runs SET superseded = true
         WHERE pipeline_id = $1 AND data_start = $2 AND id <> $3 AND NOT superseded
         RETURNING id)
       DELETE FROM pipeline_sink WHERE pipeline_id = $1 AND run_id IN (SELECT id FROM earlier)`,
      [run.pipeline_id, run.data_start, run.id],
    );
    if (documents.length > 0) {
      await client.query(
        `INSERT INTO pipeline_sink (organization_id, pipeline_id, run_id, doc)
         SELECT $1, $2, $3,
           CASE WHEN t.doc ? '_id' THEN t.doc ELSE jsonb_build_object('_id', jsonb_build_object('$oid', t.oid)) || t.doc END
             || jsonb_build_object('_viam_pipeline_run', $4::jsonb)
         FROM unnest($5::jsonb[], $6::text[]) AS t(doc, oid)`,
        [run.organization_id, run.pipeline_id, run.id, marker, documents, objectIds],
      );
      await refuseRunOutputArraysUnderUnique(client, run.organization_id, run.pipeline_id, run.id);
    }
    return true;
  });
}
