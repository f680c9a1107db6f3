import type { Database } from '../../infra/postgres/database.ts';
import { belongsToOrganization, requireOrganizationRole } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { dropPipelineIndexes } from '../data/indexes/custom-indexes.ts';
import { compilePipeline } from '../data/mql/mql-compiler.ts';
import { decodeStage, mqlLimits } from '../data/mql/mql-values.ts';
import { mqlSourceFor } from '../data/mql/tabular-data-by-mql.ts';
import { DomainError, invalidArgument, notFound } from '../errors.ts';
import type { Clock } from '../shared/clock.ts';
import { newUuid } from '../shared/ids.ts';
import { isUuid, requireName, requireUuid } from '../validate.ts';
import {
  type DataPipeline,
  deletePipelineRow,
  insertPipeline,
  type PipelineDataSource,
  type PipelineRun,
  selectPipeline,
  selectPipelines,
  selectRunsPage,
  updatePipelineFields,
} from './pipeline-repository.ts';
import { parseSchedule, tickAtOrBefore } from './pipeline-schedule.ts';

export type { DataPipeline, PipelineDataSource, PipelineRun };

/**
 * DataPipelinesService use cases (wire-protocol §2.7): pipelines are organization-wide, named (unique per
 * organization), their stages kept as the BSON bytes the client sent and compiled on create so a pipeline
 * that could never run is refused at once. Running them is pipeline-scheduler.ts / pipeline-runner.ts.
 */

export interface DataPipelineDeps {
  db: Database;
  clock: Clock;
}

export const pipelineLimits = {
  maxNameLength: 256,
  defaultRunsPageSize: 10,
  maxRunsPageSize: 1000,
} as const;

function validateStages(stages: readonly Uint8Array[], dataSource: PipelineDataSource): Uint8Array[] {
  if (stages.length === 0) throw invalidArgument('mql_binary', 'must contain at least one stage');
  if (stages.length > mqlLimits.maxStages) {
    throw invalidArgument('mql_binary', `must contain at most ${mqlLimits.maxStages} stages`, stages.length);
  }
  const decoded = stages.map((bytes, index) => decodeStage(bytes, index));
  compilePipeline(decoded, mqlSourceFor({ type: dataSource }));
  return stages.map((stage) => new Uint8Array(stage));
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}

function nameTaken(name: string): DomainError {
  return new DomainError(
    'AlreadyExists',
    `name: a data pipeline named ${JSON.stringify(name)} already exists in this organization`,
  );
}

function requirePipelineId(id: string): string {
  if (id === '') throw invalidArgument('id', 'is required');
  if (!isUuid(id)) throw invalidArgument('id', 'must be a data pipeline ID (a UUID)', id);
  return id.toLowerCase();
}

/** The pipeline if the caller's organization owns it; NotFound otherwise (no existence leak). */
export async function findVisiblePipeline(
  db: Database,
  principal: Principal,
  id: string,
): Promise<DataPipeline | undefined> {
  const pipeline = await selectPipeline(db, requirePipelineId(id));
  if (!pipeline || !belongsToOrganization(principal, pipeline.organizationId)) return undefined;
  return pipeline;
}

async function requireVisiblePipeline(db: Database, principal: Principal, id: string): Promise<DataPipeline> {
  const pipeline = await findVisiblePipeline(db, principal, id);
  if (!pipeline) throw notFound('data pipeline', id);
  return pipeline;
}

export interface CreatePipelineInput {
  organizationId: string;
  name: string;
  stages: readonly Uint8Array[];
  schedule: string;
  enableBackfill: boolean;
  dataSource: PipelineDataSource;
}

export async function createDataPipeline(
  deps: DataPipelineDeps,
  principal: Principal,
  input: CreatePipelineInput,
): Promise<string> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const name = requireName('name', input.name, pipelineLimits.maxNameLength);
  const schedule = parseSchedule(input.schedule);
  const stages = validateStages(input.stages, input.dataSource);
  const nowMs = deps.clock.nowMs();
  // Without backfill the first window is the one the next tick closes; with it, the windows from the
  // organization's earliest data on (the scheduler plans them in batches).
  let startMs = nowMs;
  if (input.enableBackfill) {
    const earliest = await deps.db.query<{ first: Date | null }>(
      'SELECT min(captured_at) AS first FROM readings WHERE organization_id = $1',
      [organizationId],
    );
    const first = earliest.rows[0]?.first?.getTime();
    if (first !== undefined && first < nowMs) startMs = first;
  }
  const pipeline: DataPipeline = {
    id: newUuid(),
    organizationId,
    name,
    stages,
    schedule: schedule.expression,
    enableBackfill: input.enableBackfill,
    dataSource: input.dataSource,
    enabled: true,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    plannedUntilMs: tickAtOrBefore(schedule, startMs) ?? startMs,
  };
  try {
    await insertPipeline(deps.db, pipeline);
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  }
  return pipeline.id;
}

/** GetDataPipeline: undefined when it does not exist or belongs to another organization. */
export async function getDataPipeline(
  deps: DataPipelineDeps,
  principal: Principal,
  id: string,
): Promise<DataPipeline | undefined> {
  return findVisiblePipeline(deps.db, principal, id);
}

export async function listDataPipelines(
  deps: DataPipelineDeps,
  principal: Principal,
  organizationIdInput: string,
): Promise<DataPipeline[]> {
  const organizationId = requireUuid('organization_id', organizationIdInput);
  requireOrganizationRole(principal, organizationId, 'operator');
  return selectPipelines(deps.db, organizationId);
}

export async function renameDataPipeline(
  deps: DataPipelineDeps,
  principal: Principal,
  input: { id: string; name: string },
): Promise<void> {
  const name = requireName('name', input.name, pipelineLimits.maxNameLength);
  const pipeline = await requireVisiblePipeline(deps.db, principal, input.id);
  requireOrganizationRole(principal, pipeline.organizationId, 'operator');
  try {
    await updatePipelineFields(deps.db, pipeline.id, { name, updatedAtMs: deps.clock.nowMs() });
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  }
}

/**
 * Enable/Disable. Disabling stops new windows from being planned (runs already queued still finish);
 * enabling resumes from where planning stopped, so the windows missed meanwhile are filled.
 */
export async function setDataPipelineEnabled(
  deps: DataPipelineDeps,
  principal: Principal,
  input: { id: string; enabled: boolean },
): Promise<void> {
  const pipeline = await requireVisiblePipeline(deps.db, principal, input.id);
  requireOrganizationRole(principal, pipeline.organizationId, 'operator');
  if (pipeline.enabled === input.enabled) return;
  await updatePipelineFields(deps.db, pipeline.id, {
    enabled: input.enabled,
    updatedAtMs: deps.clock.nowMs(),
  });
}

/** Deletes the pipeline with its run history and all its output documents. */
export async function deleteDataPipeline(
  deps: DataPipelineDeps,
  principal: Principal,
  id: string,
): Promise<void> {
  const pipeline = await requireVisiblePipeline(deps.db, principal, id);
  requireOrganizationRole(principal, pipeline.organizationId, 'operator');
  await deletePipelineRow(deps.db, pipeline.id);
  // Its sink's custom indexes: DROP INDEX CONCURRENTLY cannot share the delete's transaction. If this
  // fails, the organization's next index DDL sweeps them (custom-indexes.ts).
  await dropPipelineIndexes(deps.db, pipeline.organizationId, pipeline.id, AbortSignal.timeout(60_000)).catch(
    () => {},
  );
}

export interface RunsPage {
  pipelineId: string;
  runs: PipelineRun[];
  /** Empty when there are no more runs. */
  nextPageToken: string;
}

const tokenPrefix = 'r1';

function encodeRunsToken(run: PipelineRun): string {
  return Buffer.from(`${tokenPrefix}:${run.dataStartMs}:${run.id}`, 'utf8').toString('base64url');
}

function decodeRunsToken(token: string): { dataStartMs: number; id: string } | undefined {
  if (token === '') return undefined;
  const invalid = () =>
    invalidArgument(
      'page_token',
      'is not a token returned by ListDataPipelineRuns (pass next_page_token, or empty)',
      token,
    );
  if (token.length > 200 || !/^[A-Za-z0-9_-]+$/.test(token)) throw invalid();
  const [prefix, startMs, id, ...rest] = Buffer.from(token, 'base64url').toString('utf8').split(':');
  if (rest.length || prefix !== tokenPrefix || !startMs || !id) throw invalid();
  if (!/^-?\d{1,16}$/.test(startMs) || !isUuid(id)) throw invalid();
  return { dataStartMs: Number(startMs), id };
}

/** ListDataPipelineRuns: newest window first; page_size 0 means the default (10). */
export async function listDataPipelineRuns(
  deps: DataPipelineDeps,
  principal: Principal,
  input: { id: string; pageSize: number; pageToken: string },
): Promise<RunsPage> {
  if (!Number.isInteger(input.pageSize) || input.pageSize < 0) {
    throw invalidArgument('page_size', 'must not be negative', input.pageSize);
  }
  if (input.pageSize > pipelineLimits.maxRunsPageSize) {
    throw invalidArgument('page_size', `must be at most ${pipelineLimits.maxRunsPageSize}`, input.pageSize);
  }
  const after = decodeRunsToken(input.pageToken);
  const pipeline = await requireVisiblePipeline(deps.db, principal, input.id);
  requireOrganizationRole(principal, pipeline.organizationId, 'operator');
  const pageSize = input.pageSize || pipelineLimits.defaultRunsPageSize;
  const rows = await selectRunsPage(deps.db, pipeline.id, after, pageSize + 1);
  const runs = rows.slice(0, pageSize);
  const last = runs[runs.length - 1];
  return {
    pipelineId: pipeline.id,
    runs,
    nextPageToken: rows.length > pageSize && last ? encodeRunsToken(last) : '',
  };
}
