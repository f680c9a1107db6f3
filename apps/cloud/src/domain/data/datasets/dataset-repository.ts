import type { Queryable } from '../../../infra/postgres/database.ts';

export interface Dataset {
  id: string;
  name: string;
  organizationId: string;
  createdAtMs: number;
}

interface DatasetRow {
  id: string;
  name: string;
  organization_id: string;
  created_at: Date;
}

function datasetFromRow(row: DatasetRow): Dataset {
  return {
    id: row.id,
    name: row.name,
    organizationId: row.organization_id,
    createdAtMs: row.created_at.getTime(),
  };
}

export async function insertDataset(db: Queryable, dataset: Dataset): Promise<void> {
  await db.query('INSERT INTO datasets (id, organization_id, name, created_at) VALUES ($1, $2, $3, $4)', [
    dataset.id,
    dataset.organizationId,
    dataset.name,
    new Date(dataset.createdAtMs),
  ]);
}

export async function selectDatasetsByIds(db: Queryable, ids: readonly string[]): Promise<Dataset[]> {
  const result = await db.query<DatasetRow>(
    'SELECT id, name, organization_id, created_at FROM datasets WHERE id = ANY($1::text[]) ORDER BY created_at, name, id',
    [ids],
  );
  return result.rows.map(datasetFromRow);
}

export async function selectDatasetsByOrganizations(
  db: Queryable,
  organizationIds: readonly string[],
): Promise<Dataset[]> {
  const result = await db.query<DatasetRow>(
    'SELECT id, name, organization_id, created_at FROM datasets WHERE organization_id = ANY($1::uuid[]) ORDER BY created_at, name, id',
    [organizationIds],
  );
  return result.rows.map(datasetFromRow);
}

export async function updateDatasetName(db: Queryable, id: string, name: string): Promise<void> {
  await db.query('UPDATE datasets SET name = $2 WHERE id = $1', [id, name]);
}

/** Removes the dataset and its ID from every binary item of its organization. */
export async function deleteDatasetAndMembership(db: Queryable, dataset: Dataset): Promise<void> {
  await db.query(
    `UPDATE binary_data SET dataset_ids = array_remove(dataset_ids, $2)
      WHERE organization_id = $1 AND dataset_ids @> ARRAY[$2::text]`,
    [dataset.organizationId, dataset.id],
  );
  await db.query('DELETE FROM datasets WHERE id = $1', [dataset.id]);
}

/** Adds `targetId` to every item of the organization that is in one of `sourceIds`. */
export async function copyMembership(
  db: Queryable,
  organizationId: string,
  sourceIds: readonly string[],
  targetId: string,
): Promise<void> {
  await db.query(
    `UPDATE binary_data SET dataset_ids = dataset_ids || $3::text
      WHERE organization_id = $1 AND dataset_ids && $2::text[] AND NOT (dataset_ids @> ARRAY[$3::text])`,
    [organizationId, sourceIds, targetId],
  );
}

export async function addMembership(
  db: Queryable,
  binaryDataIds: readonly string[],
  datasetId: string,
): Promise<number> {
  const result = await db.query(
    `UPDATE binary_data SET dataset_ids = dataset_ids || $2::text
      WHERE id = ANY($1::text[]) AND NOT (dataset_ids @> ARRAY[$2::text])`,
    [binaryDataIds, datasetId],
  );
  return result.rowCount ?? 0;
}

export async function removeMembership(
  db: Queryable,
  binaryDataIds: readonly string[],
  datasetId: string,
): Promise<number> {
  const result = await db.query(
    `UPDATE binary_data SET dataset_ids = array_remove(dataset_ids, $2)
      WHERE id = ANY($1::text[]) AND dataset_ids @> ARRAY[$2::text]`,
    [binaryDataIds, datasetId],
  );
  return result.rowCount ?? 0;
}
