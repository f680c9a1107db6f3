import type { Database } from '../../../infra/postgres/database.ts';
import { belongsToOrganization, requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument, notFound } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newObjectId } from '../../shared/ids.ts';
import { requireName, requireUuid } from '../../validate.ts';
import { compilePipeline, readingsSource } from '../mql/mql-compiler.ts';
import { decodeStage, mqlLimits } from '../mql/mql-values.ts';
import {
  deleteSavedQueryRow,
  insertSavedQuery,
  type SavedQuery,
  selectSavedQueries,
  selectSavedQueryById,
  updateSavedQuery as updateSavedQueryRow,
} from './saved-query-repository.ts';

export type { SavedQuery };

/**
 * Saved MQL queries (wire-protocol §2.3): organization-wide, named (unique per organization), the stages
 * kept as the BSON bytes the client sent and compiled on save, so a query that would not run is refused
 * when it is saved. TabularDataByMQL runs one by name through `query_prefix_name`.
 */

export interface SavedQueryDeps {
  db: Database;
  clock: Clock;
}

export const savedQueryLimits = { maxNameLength: 256, defaultListLimit: 100, maxListLimit: 1000 } as const;

function validateStages(stages: readonly Uint8Array[]): Uint8Array[] {
  if (stages.length === 0) throw invalidArgument('mql_binary', 'must contain at least one stage');
  if (stages.length > mqlLimits.maxStages) {
    throw invalidArgument('mql_binary', `must contain at most ${mqlLimits.maxStages} stages`, stages.length);
  }
  const decoded = stages.map((bytes, index) => decodeStage(bytes, index));
  compilePipeline(decoded, readingsSource());
  return stages.map((stage) => new Uint8Array(stage));
}

function validateId(id: string): string {
  if (id === '') throw invalidArgument('id', 'is required');
  if (id.length > 128) throw invalidArgument('id', 'must be at most 128 characters', id);
  return id;
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}

function nameTaken(name: string): DomainError {
  return new DomainError(
    'AlreadyExists',
    `name: a saved query named ${JSON.stringify(name)} already exists in this organization`,
  );
}

async function requireVisibleSavedQuery(db: Database, principal: Principal, id: string): Promise<SavedQuery> {
  const query = await selectSavedQueryById(db, validateId(id));
  if (!query || !belongsToOrganization(principal, query.organizationId)) throw notFound('saved query', id);
  return query;
}

export async function createSavedQuery(
  deps: SavedQueryDeps,
  principal: Principal,
  input: { organizationId: string; name: string; stages: readonly Uint8Array[] },
): Promise<string> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const name = requireName('name', input.name, savedQueryLimits.maxNameLength);
  const stages = validateStages(input.stages);
  const nowMs = deps.clock.nowMs();
  const query: SavedQuery = {
    id: newObjectId(nowMs),
    organizationId,
    name,
    stages,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
  };
  try {
    await insertSavedQuery(deps.db, query);
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  }
  return query.id;
}

export async function updateSavedQuery(
  deps: SavedQueryDeps,
  principal: Principal,
  input: { id: string; name: string; stages: readonly Uint8Array[] },
): Promise<void> {
  const name = requireName('name', input.name, savedQueryLimits.maxNameLength);
  const stages = validateStages(input.stages);
  const existing = await requireVisibleSavedQuery(deps.db, principal, input.id);
  requireOrganizationRole(principal, existing.organizationId, 'operator');
  try {
    await updateSavedQueryRow(deps.db, { ...existing, name, stages, updatedAtMs: deps.clock.nowMs() });
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  }
}

export async function getSavedQuery(
  deps: SavedQueryDeps,
  principal: Principal,
  id: string,
): Promise<SavedQuery> {
  return requireVisibleSavedQuery(deps.db, principal, id);
}

export async function deleteSavedQuery(
  deps: SavedQueryDeps,
  principal: Principal,
  id: string,
): Promise<void> {
  const existing = await requireVisibleSavedQuery(deps.db, principal, id);
  requireOrganizationRole(principal, existing.organizationId, 'operator');
  await deleteSavedQueryRow(deps.db, existing.organizationId, existing.id);
}

export async function listSavedQueries(
  deps: SavedQueryDeps,
  principal: Principal,
  input: { organizationId: string; limit: number },
): Promise<SavedQuery[]> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  if (!belongsToOrganization(principal, organizationId)) {
    throw new DomainError(
      'PermissionDenied',
      `organization_id: this credential has no access to organization ${JSON.stringify(organizationId)}`,
    );
  }
  if (!Number.isSafeInteger(input.limit) || input.limit < 0) {
    throw invalidArgument('limit', 'must be a non-negative integer', input.limit);
  }
  const limit =
    input.limit === 0
      ? savedQueryLimits.defaultListLimit
      : Math.min(input.limit, savedQueryLimits.maxListLimit);
  return selectSavedQueries(deps.db, organizationId, limit);
}
