import type { Queryable } from '../../infra/postgres/database.ts';

/** Rows of `data_pipelines` and `data_pipeline_runs` (migration 0010). Every query names the organization or a pipeline id. */

export type PipelineDataSource = 'standard' | 'hot-storage';
export type RunStatus = 'scheduled' | 'started' | 'completed' | 'failed';
export type RunReason = 'schedule' | 'backfill' | 'late-data' | 'missed' | 'retry';

export interface DataPipeline {
  id: string;
  organizationId: string;
  name: string;
  /** Each stage as the BSON bytes the client sent. */
  stages: Uint8Array[];
  schedule: string;
  enableBackfill: boolean;
  dataSource: PipelineDataSource;
  enabled: boolean;
  createdAtMs: number;
  updatedAtMs: number;
  /** Latest tick whose window has a run (see pipeline-schedule.ts). */
  plannedUntilMs: number;
}

export interface PipelineRun {
  id: string;
  organizationId: string;
  pipelineId: string;
  dataStartMs: number;
  dataEndMs: number;
  status: RunStatus;
  errorMessage: string;
  reason: RunReason;
  scheduledAtMs: number;
  startedAtMs: number | null;
  endedAtMs: number | null;
  outputDocuments: number | null;
  /** 1 for a run of a window since its last success; each retry of a failed run adds one. */
  attempt: number;
}

interface PipelineRow {
  id: string;
  organization_id: string;
  name: string;
  stages: Buffer[];
  schedule: string;
  enable_backfill: boolean;
  data_source_type: PipelineDataSource;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  planned_until: Date;
}

interface RunRow {
  id: string;
  organization_id: string;
  pipeline_id: string;
  data_start: Date;
  data_end: Date;
  status: RunStatus;
  error_message: string;
  reason: RunReason;
  scheduled_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  output_documents: number | null;
  attempt: number;
}

const pipelineColumns =
  'id, organization_id, name, stages, schedule, enable_backfill, data_source_type, enabled, created_at, updated_at, planned_until';
export const runColumns =
  'id, organization_id, pipeline_id, data_start, data_end, status, error_message, reason, scheduled_at, started_at, ended_at, output_documents, attempt';

function pipelineFromRow(row: PipelineRow): DataPipeline {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    stages: row.stages.map((stage) => new Uint8Array(stage)),
    schedule: row.schedule,
    enableBackfill: row.enable_backfill,
    dataSource: row.data_source_type,
    enabled: row.enabled,
    createdAtMs: row.created_at.getTime(),
    updatedAtMs: row.updated_at.getTime(),
    plannedUntilMs: row.planned_until.getTime(),
  };
}

export function runFromRow(row: RunRow): PipelineRun {
  return {
    id: row.id,
    organizationId: row.organization_id,
    pipelineId: row.pipeline_id,
    dataStartMs: row.data_start.getTime(),
    dataEndMs: row.data_end.getTime(),
    status: row.status,
    errorMessage: row.error_message,
    reason: row.reason,
    scheduledAtMs: row.scheduled_at.getTime(),
    startedAtMs: row.started_at?.getTime() ?? null,
    endedAtMs: row.ended_at?.getTime() ?? null,
    outputDocuments: row.output_documents,
    attempt: row.attempt,
  };
}

export async function insertPipeline(db: Queryable, pipeline: DataPipeline): Promise<void> {
  await db.query(
    `INSERT INTO data_pipelines (${pipelineColumns})
     VALUES ($1, $2, $3, $4::bytea[], $5, $6, $7, $8, $9, $10, $11)`,
    [
      pipeline.id,
      pipeline.organizationId,
      pipeline.name,
      pipeline.stages.map((stage) => Buffer.from(stage)),
      pipeline.schedule,
      pipeline.enableBackfill,
      pipeline.dataSource,
      pipeline.enabled,
      new Date(pipeline.createdAtMs),
      new Date(pipeline.updatedAtMs),
      new Date(pipeline.plannedUntilMs),
    ],
  );
}

export async function selectPipeline(
  db: Queryable,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<DataPipeline | undefined> {
  const result = await db.query<PipelineRow>(
    `SELECT ${pipelineColumns} FROM data_pipelines WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return result.rows[0] ? pipelineFromRow(result.rows[0]) : undefined;
}

export async function selectPipelines(db: Queryable, organizationId: string): Promise<DataPipeline[]> {
  const result = await db.query<PipelineRow>(
    `SELECT ${pipelineColumns} FROM data_pipelines WHERE organization_id = $1 ORDER BY created_at, id`,
    [organizationId],
  );
  return result.rows.map(pipelineFromRow);
}

/** Enabled pipelines whose next window may be due, oldest plan first, locked for this pass (other replicas skip them). */
export async function lockDuePipelines(db: Queryable, limit: number): Promise<DataPipeline[]> {
  const result = await db.query<PipelineRow>(
    `SELECT ${pipelineColumns} FROM data_pipelines WHERE enabled
     ORDER BY planned_until LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return result.rows.map(pipelineFromRow);
}

export async function updatePipelineFields(
  db: Queryable,
  id: string,
  fields: { name?: string; enabled?: boolean; plannedUntilMs?: number; updatedAtMs?: number },
): Promise<boolean> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const add = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (fields.name !== undefined) add('name', fields.name);
  if (fields.enabled !== undefined) add('enabled', fields.enabled);
  if (fields.plannedUntilMs !== undefined) add('planned_until', new Date(fields.plannedUntilMs));
  if (fields.updatedAtMs !== undefined) add('updated_at', new Date(fields.updatedAtMs));
  if (sets.length === 0) return true;
  const result = await db.query(`UPDATE data_pipelines SET ${sets.join(', ')} WHERE id = $1`, values);
  return (result.rowCount ?? 0) > 0;
}

/** Runs, sink documents and the pipeline go together (foreign keys cascade). */
export async function deletePipelineRow(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM data_pipelines WHERE id = $1', [id]);
}

export async function selectRunsPage(
  db: Queryable,
  pipelineId: string,
  after: { dataStartMs: number; id: string } | undefined,
  limit: number,
): Promise<PipelineRun[]> {
  const result = after
    ? await db.query<RunRow>(
        `SELECT ${runColumns} FROM data_pipeline_runs
         WHERE pipeline_id = $1 AND (data_start, id) < ($2, $3)
         ORDER BY data_start DESC, id DESC LIMIT $4`,
        [pipelineId, new Date(after.dataStartMs), after.id, limit],
      )
    : await db.query<RunRow>(
        `SELECT ${runColumns} FROM data_pipeline_runs WHERE pipeline_id = $1
         ORDER BY data_start DESC, id DESC LIMIT $2`,
        [pipelineId, limit],
      );
  return result.rows.map(runFromRow);
}

export async function selectRun(db: Queryable, id: string): Promise<PipelineRun | undefined> {
  const result = await db.query<RunRow>(`SELECT ${runColumns} FROM data_pipeline_runs WHERE id = $1`, [id]);
  return result.rows[0] ? runFromRow(result.rows[0]) : undefined;
}
