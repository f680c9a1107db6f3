import { randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../../../infra/postgres/database.ts';
import { requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, notFound } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { requireNonEmpty, requireUuid } from '../../validate.ts';
import { type IndexDdlSession, throwIfCancelled, withIndexDdlLock } from './index-ddl-lock.ts';
import { type IndexDocuments, type IndexSpec, parseIndexSpec } from './index-spec.ts';
import {
  arrayKeyCountSql,
  arrayUnderUniqueMessage,
  createIndexSql,
  hotStoreTarget,
  type IndexTarget,
  pipelineSinkTarget,
} from './index-sql.ts';

/**
 * CreateIndex / ListIndexes / DeleteIndex (wire-protocol §2.3–2.4) for the hot store and pipeline sinks.
 * Each index is a partial expression index over its owner's rows only (the organization's hot readings,
 * one pipeline's output documents), built with CREATE INDEX CONCURRENTLY (writes go on during the build),
 * recorded in `custom_indexes` with the spec as JSON text (what ListIndexes returns).
 *
 * - All DDL runs under one cross-replica lock (index-ddl-lock.ts): concurrent builds would deadlock.
 * - CreateIndex with a name that exists: OK when the spec is identical (idempotent, like MongoDB's
 *   createIndex), AlreadyExists when it differs. The same keys and options under another name:
 *   AlreadyExists naming the existing index (MongoDB refuses that too).
 * - A failed build leaves an INVALID index behind: it is dropped with its record before the error is
 *   reported; leftovers of a crashed process are swept by the next DDL of the organization.
 * - Pipeline-sink indexes belong to the pipeline's id (renames keep them); deleting the pipeline drops
 *   them (`dropPipelineIndexes`).
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

/** Custom indexes one organization may have per collection (per pipeline for sinks). */
export const maxIndexesPerCollection = 20;

interface ResolvedScope {
  organizationId: string;
  collection: IndexCollection;
  /** The `pipeline_name` column: '' for the hot store, the pipeline's id for a sink. */
  owner: string;
  /** The pipeline's name as the caller gave it ('' for the hot store). */
  pipelineName: string;
  documents: IndexDocuments;
  target: IndexTarget;
}

async function resolveScope(
  db: Queryable,
  principal: Principal,
  scope: IndexScope,
  role: 'owner' | 'operator',
): Promise<ResolvedScope> {
  const organizationId = requireUuid('organization_id', scope.organizationId);
  requireOrganizationRole(principal, organizationId, role);
  if (scope.collection === 'unspecified') {
    throw new DomainError(
      'InvalidArgument',
      'collection_type: must be INDEXABLE_COLLECTION_HOT_STORE or INDEXABLE_COLLECTION_PIPELINE_SINK (got UNSPECIFIED)',
    );
  }
  if (scope.collection === 'hot_store') {
    return {
      organizationId,
      collection: 'hot_store',
      owner: '',
      pipelineName: '',
      documents: 'readings',
      target: hotStoreTarget(organizationId),
    };
  }
  const pipelineName = requireNonEmpty('pipeline_name', scope.pipelineName);
  const found = await db.query<{ id: string }>(
    'SELECT id FROM data_pipelines WHERE organization_id = $1 AND name = $2',
    [organizationId, pipelineName],
  );
  const pipelineId = found.rows[0]?.id;
  if (!pipelineId) throw notFound('pipeline', pipelineName);
  return {
    organizationId,
    collection: 'pipeline_sink',
    owner: pipelineId,
    pipelineName,
    documents: 'sink',
    target: pipelineSinkTarget(pipelineId),
  };
}

interface IndexRow {
  index_name: string;
  spec_json: string;
  pg_index_name: string;
}

async function selectIndexes(db: Queryable, scope: ResolvedScope): Promise<IndexRow[]> {
  const result = await db.query<IndexRow>(
    `SELECT index_name, spec_json, pg_index_name FROM custom_indexes
      WHERE organization_id = $1 AND collection_type = $2 AND pipeline_name = $3
      ORDER BY created_at, index_name`,
    [scope.organizationId, scope.collection, scope.owner],
  );
  return result.rows;
}

/** The spec without its name: two indexes with the same one are the same index. */
function withoutName(specJson: string): string {
  const parsed = JSON.parse(specJson) as { key: unknown; options: Record<string, unknown> };
  const { name: _name, ...options } = parsed.options;
  return JSON.stringify({ key: parsed.key, options });
}

export async function createCustomIndex(
  deps: CustomIndexDeps,
  principal: Principal,
  scope: IndexScope,
  indexSpec: readonly Uint8Array[],
  signal: AbortSignal,
): Promise<void> {
  const resolved = await resolveScope(deps.db, principal, scope, 'owner');
  const spec = parseIndexSpec(indexSpec, resolved.documents);
  await withIndexDdlLock(deps.db, signal, async (session) => {
    await removeLeftovers(session.client, resolved.organizationId);
    const existing = await selectIndexes(session.client, resolved);
    const sameName = existing.find((row) => row.index_name === spec.name);
    if (sameName?.spec_json === spec.json) return;
    if (sameName) {
      throw new DomainError(
        'AlreadyExists',
        `index_spec.options.name: an index named ${JSON.stringify(spec.name)} already exists with another spec (${sameName.spec_json})`,
      );
    }
    const shape = withoutName(spec.json);
    const sameShape = existing.find((row) => withoutName(row.spec_json) === shape);
    if (sameShape) {
      throw new DomainError(
        'AlreadyExists',
        `index_spec.keys: index ${JSON.stringify(sameShape.index_name)} already has these keys and options`,
      );
    }
    if (existing.length >= maxIndexesPerCollection) {
      throw new DomainError(
        'ResourceExhausted',
        `index_spec: at most ${maxIndexesPerCollection} custom indexes per collection (this one has ${existing.length})`,
      );
    }
    throwIfCancelled(signal);
    // Unique over arrays: refused before the build, and after it (documents that arrived meanwhile).
    await refuseArraysUnderUnique(session.client, resolved, spec);
    await buildIndex(deps, session, resolved, spec, signal);
    try {
      await refuseArraysUnderUnique(session.client, resolved, spec);
    } catch (error) {
      const built = await selectIndexes(session.client, resolved);
      const row = built.find((index) => index.index_name === spec.name);
      if (row) await dropIndex(session.client, resolved.organizationId, row.pg_index_name);
      throw error;
    }
  });
}

async function refuseArraysUnderUnique(
  client: Queryable,
  scope: ResolvedScope,
  spec: IndexSpec,
): Promise<void> {
  if (!spec.unique) return;
  const paths = spec.keys.map((key) => key.path).filter((path) => !scope.target.columns.includes(path));
  if (paths.length === 0) return;
  const counts = await client.query<{ path: string; n: number }>(arrayKeyCountSql(scope.target, paths));
  if (counts.rows.length > 0) {
    throw new DomainError(
      'InvalidArgument',
      `index_spec.options.unique: ${arrayUnderUniqueMessage(spec.name, counts.rows)}; nothing was created`,
    );
  }
}

async function buildIndex(
  deps: CustomIndexDeps,
  session: IndexDdlSession,
  scope: ResolvedScope,
  spec: IndexSpec,
  signal: AbortSignal,
): Promise<void> {
  const { client } = session;
  // The name is ours (`cix_` + hex), never the client's.
  const pgIndexName = `cix_${randomBytes(12).toString('hex')}`;
  await client.query(
    `INSERT INTO custom_indexes (organization_id, collection_type, pipeline_name, index_name, spec_json, pg_index_name, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      scope.organizationId,
      scope.collection,
      scope.owner,
      spec.name,
      spec.json,
      pgIndexName,
      new Date(deps.clock.nowMs()),
    ],
  );
  // A cancel that lands between the build's internal transactions can be lost: repeat it until it ends.
  let repeat: NodeJS.Timeout | undefined;
  const onAbort = () => {
    const cancel = () => session.cancel().catch(() => {});
    cancel();
    repeat = setInterval(cancel, 250);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await client.query(createIndexSql(scope.target, spec, pgIndexName));
  } catch (error) {
    clearInterval(repeat);
    // A failed concurrent build leaves an INVALID index behind: remove it and the record (should that
    // fail too, e.g. hit by a late cancel, the next DDL of the organization sweeps it).
    await dropIndex(client, scope.organizationId, pgIndexName).catch(() => {});
    throw buildError(error, spec.name, signal);
  } finally {
    clearInterval(repeat);
    signal.removeEventListener('abort', onAbort);
  }
}

function buildError(error: unknown, name: string, signal: AbortSignal): unknown {
  const code = (error as { code?: string }).code;
  const index = JSON.stringify(name);
  if (code === '23505') {
    return new DomainError(
      'FailedPrecondition',
      `index_spec.options.unique: documents already stored have duplicate values for the keys of index ${index}; nothing was created`,
      { cause: error },
    );
  }
  if (code === '57014' && signal.aborted) {
    return new DomainError(
      'DeadlineExceeded',
      `index ${index}: the call ended during the build, which was stopped and removed`,
      { cause: error },
    );
  }
  if (code === '40P01' || code === '55P03' || code === '57014') {
    return new DomainError(
      'Aborted',
      `index ${index}: the build was interrupted (${(error as Error).message}) and removed; try again`,
      { cause: error },
    );
  }
  return error;
}

async function dropIndex(client: Queryable, organizationId: string, pgIndexName: string): Promise<void> {
  await client.query(`DROP INDEX CONCURRENTLY IF EXISTS public.${pgIndexName}`);
  await client.query('DELETE FROM custom_indexes WHERE organization_id = $1 AND pg_index_name = $2', [
    organizationId,
    pgIndexName,
  ]);
}

/**
 * Under the DDL lock no build is running, so a record of the organization without a valid index, an
 * INVALID `cix_` index, or a sink index whose pipeline is gone is what a crash (or a failed drop) left.
 */
async function removeLeftovers(client: Queryable, organizationId: string): Promise<void> {
  const stale = await client.query<{ pg_index_name: string }>(
    `SELECT c.pg_index_name FROM custom_indexes c
       LEFT JOIN pg_class k ON k.relname = c.pg_index_name AND k.relnamespace = 'public'::regnamespace
       LEFT JOIN pg_index i ON i.indexrelid = k.oid
      WHERE c.organization_id = $1
        AND (i.indisvalid IS NOT TRUE
             OR (c.collection_type = 'pipeline_sink'
                 AND NOT EXISTS (SELECT 1 FROM data_pipelines p
                                  WHERE p.organization_id = c.organization_id AND p.id::text = c.pipeline_name)))`,
    [organizationId],
  );
  for (const row of stale.rows) await dropIndex(client, organizationId, row.pg_index_name);
  const invalid = await client.query<{ relname: string }>(
    `SELECT k.relname FROM pg_index i JOIN pg_class k ON k.oid = i.indexrelid
      WHERE NOT i.indisvalid AND k.relnamespace = 'public'::regnamespace AND k.relname ~ '^cix_[0-9a-f]{24}$'`,
  );
  for (const row of invalid.rows)
    await client.query(`DROP INDEX CONCURRENTLY IF EXISTS public.${row.relname}`);
}

export async function listCustomIndexes(
  deps: CustomIndexDeps,
  principal: Principal,
  scope: IndexScope,
): Promise<CustomIndex[]> {
  const resolved = await resolveScope(deps.db, principal, scope, 'operator');
  const rows = await selectIndexes(deps.db, resolved);
  return rows.map((row) => ({
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
  signal: AbortSignal,
): Promise<void> {
  const resolved = await resolveScope(deps.db, principal, scope, 'owner');
  const name = requireNonEmpty('index_name', indexName);
  await withIndexDdlLock(deps.db, signal, async ({ client }) => {
    const row = (await selectIndexes(client, resolved)).find((index) => index.index_name === name);
    if (!row) throw notFound('index', name);
    await dropIndex(client, resolved.organizationId, row.pg_index_name);
  });
}

/**
 * Drops the custom indexes of a deleted pipeline's sink (call after the pipeline row is gone; anything
 * missed is swept by the organization's next index DDL).
 */
/**
 * Refuses a pipeline run's output (already inserted in the caller's transaction, which then rolls back)
 * when a document reaches an array at a key of one of the sink's unique indexes: InvalidArgument naming
 * the index and paths.
 */
export async function refuseRunOutputArraysUnderUnique(
  client: Queryable,
  organizationId: string,
  pipelineId: string,
  runId: string,
): Promise<void> {
  const indexes = await client.query<{ index_name: string; spec_json: string }>(
    `SELECT index_name, spec_json FROM custom_indexes
      WHERE organization_id = $1 AND collection_type = 'pipeline_sink' AND pipeline_name = $2`,
    [organizationId, pipelineId],
  );
  const target = pipelineSinkTarget(pipelineId);
  for (const index of indexes.rows) {
    const spec = JSON.parse(index.spec_json) as {
      key: Record<string, number>;
      options: { unique?: boolean };
    };
    if (spec.options.unique !== true) continue;
    const counts = await client.query<{ path: string; n: number }>(
      arrayKeyCountSql(target, Object.keys(spec.key), runId),
    );
    if (counts.rows.length > 0) {
      throw new DomainError(
        'InvalidArgument',
        `output: ${arrayUnderUniqueMessage(index.index_name, counts.rows)}; nothing was written`,
      );
    }
  }
}

export async function dropPipelineIndexes(
  db: Database,
  organizationId: string,
  pipelineId: string,
  signal: AbortSignal,
): Promise<void> {
  await withIndexDdlLock(db, signal, async ({ client }) => {
    const rows = await client.query<{ pg_index_name: string }>(
      `SELECT pg_index_name FROM custom_indexes
        WHERE organization_id = $1 AND collection_type = 'pipeline_sink' AND pipeline_name = $2`,
      [organizationId, pipelineId],
    );
    for (const row of rows.rows) await dropIndex(client, organizationId, row.pg_index_name);
  });
}
