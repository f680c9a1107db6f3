import { requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { invalidArgument, notFound } from '../../errors.ts';
import { pipelineBelongsTo, pipelineSinkSource } from '../../pipelines/pipeline-sink-source.ts';
import { isUuid, requireUuid } from '../../validate.ts';
import { hotStorageSource } from '../hot-storage/hot-storage-source.ts';
import { indexKeysOf, withIndexHint } from '../indexes/index-match.ts';
import {
  type OrganizationQueryDeps,
  type QueryLimits,
  runOrganizationQuery,
} from '../query-access/organization-query.ts';
import { selectSavedQueryByName } from '../saved-queries/saved-query-repository.ts';
import { compilePipeline, type MqlSource, readingsSource } from './mql-compiler.ts';
import { decodeStage, type MqlStage, mqlLimits } from './mql-values.ts';
import { compileRollupPrefix } from './rollups/rollup-union.ts';

/**
 * TabularDataByMQL (wire-protocol §2.3, §3.3): the saved query named by `query_prefix_name` (its stages
 * first), then the request's stages, compiled to one SQL statement over the data source and run by
 * `runOrganizationQuery` — read only, as the query role that sees only the caller's organization, with
 * the configured time/row/byte budgets. Each result document comes back as BSON.
 */

export type MqlDataSource =
  | { type: 'standard' }
  | { type: 'hot-storage' }
  | { type: 'pipeline-sink'; pipelineId: string };

export interface MqlQueryDeps extends OrganizationQueryDeps {
  queryLimits: QueryLimits;
}

export interface MqlQueryInput {
  organizationId: string;
  stages: readonly Uint8Array[];
  dataSource: MqlDataSource;
  queryPrefixName?: string | undefined;
}

/**
 * The relation a data source reads. STANDARD is the organization's document view; hot storage and
 * pipeline sinks plug in here (their relation + columns, or a jsonb document column via `restSql`).
 */
export function mqlSourceFor(dataSource: MqlDataSource, organizationId?: string): MqlSource {
  switch (dataSource.type) {
    case 'standard':
      // A leading $match + $group reads the hourly rollups (migration 0023) where it can, exactly.
      return { ...readingsSource(), rollupPrefix: compileRollupPrefix };
    case 'hot-storage':
      return hotStorageSource(organizationId);
    case 'pipeline-sink':
      return pipelineSinkSource(requireSinkPipelineId(dataSource.pipelineId));
  }
}

function requireSinkPipelineId(id: string): string {
  if (id === '') {
    throw invalidArgument('data_source.pipeline_id', 'is required when the source type is PIPELINE_SINK');
  }
  if (!isUuid(id))
    throw invalidArgument('data_source.pipeline_id', 'must be a data pipeline ID (a UUID)', id);
  return id.toLowerCase();
}

export async function tabularDataByMql(
  deps: MqlQueryDeps,
  principal: Principal,
  input: MqlQueryInput,
  signal: AbortSignal,
): Promise<Uint8Array[]> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const source = mqlSourceFor(input.dataSource, organizationId);
  if (input.dataSource.type === 'pipeline-sink') {
    const pipelineId = requireSinkPipelineId(input.dataSource.pipelineId);
    if (!(await pipelineBelongsTo(deps.db, pipelineId, organizationId))) {
      throw notFound('data pipeline', input.dataSource.pipelineId);
    }
  }
  const prefix = await savedQueryStages(deps, organizationId, input.queryPrefixName);
  if (prefix.length + input.stages.length > mqlLimits.maxStages) {
    throw invalidArgument(
      'mql_binary',
      `a pipeline may have at most ${mqlLimits.maxStages} stages`,
      prefix.length + input.stages.length,
    );
  }
  const stages = [...prefix, ...input.stages.map((bytes, index) => decodeStage(bytes, index))];
  const { sql } = compilePipeline(
    stages,
    withIndexHint(source, stages, await indexKeysOf(deps.db, organizationId, input.dataSource)),
  );
  const result = await runOrganizationQuery(
    deps,
    { organizationId, sql, limits: deps.queryLimits, rowShape: 'json-document' },
    signal,
  );
  return result.documents;
}

async function savedQueryStages(
  deps: MqlQueryDeps,
  organizationId: string,
  name: string | undefined,
): Promise<MqlStage[]> {
  if (name === undefined || name === '') return [];
  const saved = await selectSavedQueryByName(deps.db, organizationId, name);
  if (!saved) throw notFound('saved query', name);
  const field = `saved query ${JSON.stringify(name)}`;
  return saved.stages.map((bytes, index) => decodeStage(bytes, index, field));
}
