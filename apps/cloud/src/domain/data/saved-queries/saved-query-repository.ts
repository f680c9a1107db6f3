import type { Queryable } from '../../../infra/postgres/database.ts';

export interface SavedQuery {
  id: string;
  organizationId: string;
  name: string;
  /** Each stage as the BSON bytes the client sent. */
  stages: Uint8Array[];
  createdAtMs: number;
  updatedAtMs: number;
}

interface SavedQueryRow {
  id: string;
  organization_id: string;
  name: string;
  stages: Buffer[];
  created_at: Date;
  updated_at: Date;
}

const columns = 'id, organization_id, name, stages, created_at, updated_at';

function savedQueryFromRow(row: SavedQueryRow): SavedQuery {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    stages: row.stages.map((stage) => new Uint8Array(stage)),
    createdAtMs: row.created_at.getTime(),
    updatedAtMs: row.updated_at.getTime(),
  };
}

const toBuffers = (stages: readonly Uint8Array[]) => stages.map((stage) => Buffer.from(stage));

export async function insertSavedQuery(db: Queryable, query: SavedQuery): Promise<void> {
  await db.query(`INSERT INTO saved_queries (${columns}) VALUES ($1, $2, $3, $4::bytea[], $5, $6)`, [
    query.id,
    query.organizationId,
    query.name,
    toBuffers(query.stages),
    new Date(query.createdAtMs),
    new Date(query.updatedAtMs),
  ]);
}

export async function selectSavedQueryById(db: Queryable, id: string): Promise<SavedQuery | undefined> {
  const result = await db.query<SavedQueryRow>(`SELECT ${columns} FROM saved_queries WHERE id = $1`, [id]);
  return result.rows[0] ? savedQueryFromRow(result.rows[0]) : undefined;
}

export async function selectSavedQueryByName(
  db: Queryable,
  organizationId: string,
  name: string,
): Promise<SavedQuery | undefined> {
  const result = await db.query<SavedQueryRow>(
    `SELECT ${columns} FROM saved_queries WHERE organization_id = $1 AND name = $2`,
    [organizationId, name],
  );
  return result.rows[0] ? savedQueryFromRow(result.rows[0]) : undefined;
}

export async function selectSavedQueries(
  db: Queryable,
  organizationId: string,
  limit: number,
): Promise<SavedQuery[]> {
  const result = await db.query<SavedQueryRow>(
    `SELECT ${columns} FROM saved_queries WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2`,
    [organizationId, limit],
  );
  return result.rows.map(savedQueryFromRow);
}

export async function updateSavedQuery(
  db: Queryable,
  query: Pick<SavedQuery, 'id' | 'organizationId' | 'name' | 'stages' | 'updatedAtMs'>,
): Promise<void> {
  await db.query(
    'UPDATE saved_queries SET name = $3, stages = $4::bytea[], updated_at = $5 WHERE id = $1 AND organization_id = $2',
    [query.id, query.organizationId, query.name, toBuffers(query.stages), new Date(query.updatedAtMs)],
  );
}

export async function deleteSavedQueryRow(db: Queryable, organizationId: string, id: string): Promise<void> {
  await db.query('DELETE FROM saved_queries WHERE id = $1 AND organization_id = $2', [id, organizationId]);
}
