import { type Database, withTransaction } from '../../../infra/postgres/database.ts';
import { belongsToOrganization, requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument, notFound } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newObjectId } from '../../shared/ids.ts';
import { requireListMax, requireName, requireNonEmptyList, requireUuid } from '../../validate.ts';
import type { BinaryDataRef } from '../query/binary-data-ids.ts';
import { findBinaryItems } from '../query/binary-queries.ts';
import type { DataQueryDeps } from '../query/data-query-deps.ts';
import {
  addMembership,
  copyMembership,
  type Dataset,
  deleteDatasetAndMembership,
  insertDataset,
  removeMembership,
  selectDatasetsByIds,
  selectDatasetsByOrganizations,
  updateDatasetName,
} from './dataset-repository.ts';

export type { Dataset };

export interface DatasetDeps {
  db: Database;
  clock: Clock;
}

export const datasetLimits = { maxNameLength: 256, maxIdsPerRequest: 1000 } as const;

function validateName(name: string): string {
  return requireName('name', name, datasetLimits.maxNameLength);
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}

function nameTaken(name: string): DomainError {
  return new DomainError(
    'AlreadyExists',
    `name: a dataset named ${JSON.stringify(name)} already exists in this organization`,
  );
}

async function insertUnique(db: Parameters<typeof insertDataset>[0], dataset: Dataset): Promise<void> {
  try {
    await insertDataset(db, dataset);
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(dataset.name);
    throw error;
  }
}

function validateDatasetId(field: string, id: string): string {
  if (id === '') throw invalidArgument(field, 'is required');
  if (id.length > 128) throw invalidArgument(field, 'must be at most 128 characters', id);
  return id;
}

/** A dataset the caller can see (any standing in its organization); unknown and foreign IDs alike are NotFound. */
export async function requireVisibleDataset(
  db: Database,
  principal: Principal,
  id: string,
  field = 'id',
): Promise<Dataset> {
  const [dataset] = await selectDatasetsByIds(db, [validateDatasetId(field, id)]);
  if (!dataset || !belongsToOrganization(principal, dataset.organizationId)) throw notFound('dataset', id);
  return dataset;
}

export async function createDataset(
  deps: DatasetDeps,
  principal: Principal,
  input: { name: string; organizationId: string },
): Promise<string> {
  const name = validateName(input.name);
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const dataset = {
    id: newObjectId(deps.clock.nowMs()),
    name,
    organizationId,
    createdAtMs: deps.clock.nowMs(),
  };
  await insertUnique(deps.db, dataset);
  return dataset.id;
}

export async function renameDataset(
  deps: DatasetDeps,
  principal: Principal,
  input: { id: string; name: string },
): Promise<void> {
  const name = validateName(input.name);
  const dataset = await requireVisibleDataset(deps.db, principal, input.id);
  requireOrganizationRole(principal, dataset.organizationId, 'operator');
  try {
    await updateDatasetName(deps.db, dataset.id, name);
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  }
}

export async function deleteDataset(deps: DatasetDeps, principal: Principal, id: string): Promise<void> {
  const dataset = await requireVisibleDataset(deps.db, principal, id);
  requireOrganizationRole(principal, dataset.organizationId, 'operator');
  await withTransaction(deps.db, (client) => deleteDatasetAndMembership(client, dataset));
}

export async function listDatasetsByOrganization(
  deps: DatasetDeps,
  principal: Principal,
  organizationId: string,
): Promise<Dataset[]> {
  const id = requireUuid('organization_id', organizationId);
  if (!belongsToOrganization(principal, id)) {
    throw new DomainError(
      'PermissionDenied',
      `organization_id: this credential has no access to organization ${JSON.stringify(id)}`,
    );
  }
  return selectDatasetsByOrganizations(deps.db, [id]);
}

/** The visible datasets among `ids`; unknown and foreign IDs are left out. */
export async function listDatasetsByIds(
  deps: DatasetDeps,
  principal: Principal,
  ids: readonly string[],
): Promise<Dataset[]> {
  requireNonEmptyList('ids', ids);
  requireListMax('ids', ids, datasetLimits.maxIdsPerRequest);
  for (const [index, id] of ids.entries()) validateDatasetId(`ids[${index}]`, id);
  const found = await selectDatasetsByIds(deps.db, [...new Set(ids)]);
  return found.filter((dataset) => belongsToOrganization(principal, dataset.organizationId));
}

/** A new dataset named `name` holding every item of the given datasets (all of `organizationId`). */
export async function mergeDatasets(
  deps: DatasetDeps,
  principal: Principal,
  input: { datasetIds: readonly string[]; name: string; organizationId: string },
): Promise<string> {
  const name = validateName(input.name);
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireNonEmptyList('dataset_ids', input.datasetIds);
  requireListMax('dataset_ids', input.datasetIds, datasetLimits.maxIdsPerRequest);
  for (const [index, id] of input.datasetIds.entries()) validateDatasetId(`dataset_ids[${index}]`, id);
  requireOrganizationRole(principal, organizationId, 'operator');
  const sourceIds = [...new Set(input.datasetIds)];
  const found = await selectDatasetsByIds(deps.db, sourceIds);
  for (const id of sourceIds) {
    const dataset = found.find((candidate) => candidate.id === id);
    // A dataset of another organization is reported like an unknown one.
    if (!dataset || dataset.organizationId !== organizationId) throw notFound('dataset', id);
  }
  const dataset = {
    id: newObjectId(deps.clock.nowMs()),
    name,
    organizationId,
    createdAtMs: deps.clock.nowMs(),
  };
  await withTransaction(deps.db, async (client) => {
    await insertUnique(client, dataset);
    await copyMembership(client, organizationId, sourceIds, dataset.id);
  });
  return dataset.id;
}

/**
 * Adds or removes caller-visible binary items to/from a dataset. Unknown and foreign item IDs are
 * skipped; a visible item of another organization than the dataset's is InvalidArgument.
 */
export async function changeDatasetMembership(
  deps: DataQueryDeps,
  principal: Principal,
  input: { refs: readonly BinaryDataRef[]; datasetId: string; change: 'add' | 'remove' },
): Promise<number> {
  const dataset = await requireVisibleDataset(deps.db, principal, input.datasetId, 'dataset_id');
  const items = await findBinaryItems(deps, principal, input.refs);
  const foreign = items.find((item) => item.metadata.organizationId !== dataset.organizationId);
  if (foreign) {
    throw invalidArgument(
      'binary_data_ids',
      `binary data ${JSON.stringify(foreign.binaryDataId)} belongs to another organization than dataset ${JSON.stringify(dataset.id)}`,
    );
  }
  if (items.length === 0) return 0;
  const ids = items.map((item) => item.binaryDataId);
  return input.change === 'add'
    ? addMembership(deps.db, ids, dataset.id)
    : removeMembership(deps.db, ids, dataset.id);
}
