import { randomBytes } from 'node:crypto';
import type { Database } from '../../../infra/postgres/database.ts';
import { requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, notFound } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { requireNonEmpty, requireUuid } from '../../validate.ts';
import { parseIndexSpec } from './index-spec.ts';
import { createIndexSql, type IndexTarget } from './index-sql.ts';

/**
 * CreateIndex / ListIndexes / DeleteIndex (wire-protocol §2.3–2.4) for the hot store. Each index is a
 * partial expression index over the organization's rows only, built with CREATE INDEX CONCURRENTLY (writes
 * go on during the build), recorded in `custom_indexes` with the spec as given (JSON text for listing).
 * Pipeline sinks answer Unimplemented until their storage exists.
 */

export type IndexCollection = 'hot_store' | 'pipeline_sink';

export interface CustomIndexDeps {
  db: Database;
  clock: Clock;
}

export interface IndexScope {
  organizationId: string;
  collection: IndexCollection | 'unspecified';
  pipelineName?: string | undefined;
}

export interface CustomIndex {
  collection: IndexCollection;
  pipelineName: string;
  name: string;
  specJson: string;
}

/** Custom indexes one organization may have per collection. */
export const maxIndexesPerCollection = 20;

export const hotStoreTarget: IndexTarget = { table: 'public.hot_readings', dataColumn: 'data' };

interface ResolvedScope {
  organizationId: string;
  collection: IndexCollection;
  pipelineName: string;
  target: IndexTarget;
}

function resolveScope(principal: Principal, scope: IndexScope, role: 'owner' | 'operator'): ResolvedScope {
  const organizationId = requireUuid('organization_id', scope.organizationId);
  requireOrganizationRole(principal, organizationId, role);
  if (scope.collection === 'unspecified') {
    throw new DomainError(
      'InvalidArgument',
      'collection_type: must be INDEXABLE_COLLECTION_HOT_STORE or INDEXABLE_COLLECTION_PIPELINE_SINK (got UNSPECIFIED)',
    );
  }
  if (scope.collection === 'pipeline_sink') {
    requireNonEmpty('pipeline_name', scope.pipelineName);
    throw new DomainError(
      'Unimplemented',
      'collection_type: custom indexes on pipeline sinks are not available yet',
    );
  }
  return { organizationId, collection: scope.collection, pipelineName: '', target: hotStoreTarget };
}

export async function createCustomIndex(
  deps: CustomIndexDeps,
  principal: Principal,
  scope: IndexScope,
  indexSpec: readonly Uint8Array[],
  signal: AbortSignal,
): Promise<void> {
  const resolved = resolveScope(principal, scope, 'owner');
  const spec = parseIndexSpec(indexSpec);
  signal.throwIfAborted();
  const pgIndexName = `cix_${randomBytes(12).toString('hex')}`;
  const inserted = await deps.db.query(
    `INSERT INTO custom_indexes (organization_id, collection_type, pipeline_name, index_name, spec_json, pg_index_name, created_at)
     SELECT $1, $2, $3, $4, $5, $6, $7
      WHERE (SELECT count(*) FROM custom_indexes WHERE organization_id = $1 AND collection_type = $2 AND pipeline_name = $3) < $8
     ON CONFLICT DO NOTHING`,
    [
      resolved.organizationId,
      resolved.collection,
      resolved.pipelineName,
      spec.name,
      spec.json,
      pgIndexName,
      new Date(deps.clock.nowMs()),
      maxIndexesPerCollection,
    ],
  );
  if (inserted.rowCount === 0) await explainRefusedInsert(deps, resolved, spec.name);
  try {
    await deps.db.query(createIndexSql(resolved.target, spec, pgIndexName, resolved.organizationId));
  } catch (error) {
    // A failed concurrent build leaves an INVALID index behind: remove it and the record.
    await deps.db.query(`DROP INDEX CONCURRENTLY IF EXISTS ${pgIndexName}`).catch(() => {});
    await deps.db.query('DELETE FROM custom_indexes WHERE pg_index_name = $1', [pgIndexName]);
    if ((error as { code?: string }).code === '23505') {
      throw new DomainError(
        'FailedPrecondition',
        `index_spec.options.unique: documents already stored have duplicate values for the keys of index ${JSON.stringify(spec.name)}`,
      );
    }
    throw error;
  }
}

async function explainRefusedInsert(
  deps: CustomIndexDeps,
  scope: ResolvedScope,
  name: string,
): Promise<never> {
  const existing = await deps.db.query(
    `SELECT 1 FROM custom_indexes WHERE organization_id = $1 AND collection_type = $2 AND pipeline_name = $3 AND index_name = $4`,
    [scope.organizationId, scope.collection, scope.pipelineName, name],
  );
  if (existing.rowCount) {
    throw new DomainError(
      'AlreadyExists',
      `index_spec.options.name: an index named ${JSON.stringify(name)} already exists`,
    );
  }
  throw new DomainError(
    'ResourceExhausted',
    `index_spec: an organization may have at most ${maxIndexesPerCollection} custom indexes per collection`,
  );
}

export async function listCustomIndexes(
  deps: CustomIndexDeps,
  principal: Principal,
  scope: IndexScope,
): Promise<CustomIndex[]> {
  const resolved = resolveScope(principal, scope, 'operator');
  const result = await deps.db.query<{ index_name: string; spec_json: string }>(
    `SELECT index_name, spec_json FROM custom_indexes
      WHERE organization_id = $1 AND collection_type = $2 AND pipeline_name = $3
      ORDER BY created_at, index_name`,
    [resolved.organizationId, resolved.collection, resolved.pipelineName],
  );
  return result.rows.map((row) => ({
    collection: resolved.collection,
    pipelineName: resolved.pipelineName,
    name: row.index_name,
    specJson: row.spec_json,
  }));
}

export async function deleteCustomIndex(
  deps: CustomIndexDeps,
  principal: Principal,
  scope: IndexScope,
  indexName: string,
): Promise<void> {
  const resolved = resolveScope(principal, scope, 'owner');
  const name = requireNonEmpty('index_name', indexName);
  const found = await deps.db.query<{ pg_index_name: string }>(
    `SELECT pg_index_name FROM custom_indexes
      WHERE organization_id = $1 AND collection_type = $2 AND pipeline_name = $3 AND index_name = $4`,
    [resolved.organizationId, resolved.collection, resolved.pipelineName, name],
  );
  const row = found.rows[0];
  if (!row) throw notFound('index', name);
  // The name is ours (`cix_` + hex), never the client's.
  await deps.db.query(`DROP INDEX CONCURRENTLY IF EXISTS ${row.pg_index_name}`);
  await deps.db.query('DELETE FROM custom_indexes WHERE pg_index_name = $1', [row.pg_index_name]);
}
