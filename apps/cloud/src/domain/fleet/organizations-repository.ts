import type { Queryable } from '../../infra/postgres/database.ts';

export interface OrganizationRecord {
  id: string;
  name: string;
  publicNamespace: string | null;
  defaultRegion: string;
  cid: string | null;
  createdAt: Date;
}

interface OrganizationRow {
  id: string;
  name: string;
  public_namespace: string | null;
  default_region: string;
  cid: string | null;
  created_at: Date;
}

const columns = 'id, name, public_namespace, default_region, cid, created_at';

function fromRow(row: OrganizationRow): OrganizationRecord {
  return {
    id: row.id,
    name: row.name,
    publicNamespace: row.public_namespace,
    defaultRegion: row.default_region,
    cid: row.cid,
    createdAt: row.created_at,
  };
}

export async function listOrganizationsByIds(
  db: Queryable,
  ids: readonly string[],
): Promise<OrganizationRecord[]> {
  const result = await db.query<OrganizationRow>(
    `SELECT ${columns} FROM organizations WHERE id = ANY($1::uuid[]) ORDER BY created_at, id`,
    [ids],
  );
  return result.rows.map(fromRow);
}

export async function findOrganization(db: Queryable, id: string): Promise<OrganizationRecord | undefined> {
  const result = await db.query<OrganizationRow>(`SELECT ${columns} FROM organizations WHERE id = $1`, [id]);
  return result.rows[0] && fromRow(result.rows[0]);
}

export async function updateOrganization(
  db: Queryable,
  id: string,
  changes: { name?: string; publicNamespace?: string; defaultRegion?: string; cid?: string },
): Promise<OrganizationRecord | undefined> {
  const result = await db.query<OrganizationRow>(
    `UPDATE organizations SET
       name = COALESCE($2, name),
       public_namespace = COALESCE($3, public_namespace),
       default_region = COALESCE($4, default_region),
       cid = COALESCE($5, cid)
     WHERE id = $1 RETURNING ${columns}`,
    [
      id,
      changes.name ?? null,
      changes.publicNamespace ?? null,
      changes.defaultRegion ?? null,
      changes.cid ?? null,
    ],
  );
  return result.rows[0] && fromRow(result.rows[0]);
}

export async function isNamespaceTaken(
  db: Queryable,
  namespace: string,
  exceptOrganizationId: string,
): Promise<boolean> {
  const result = await db.query(
    'SELECT 1 FROM organizations WHERE lower(public_namespace) = lower($1) AND id <> $2::uuid',
    [namespace, exceptOrganizationId],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function countRobotsInOrganization(db: Queryable, organizationId: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM robots WHERE organization_id = $1',
    [organizationId],
  );
  return result.rows[0]?.n ?? 0;
}

export async function deleteOrganization(db: Queryable, organizationId: string): Promise<void> {
  // Locations reference their parent with ON DELETE RESTRICT: detach them first, then cascade.
  await db.query('UPDATE locations SET parent_location_id = NULL WHERE organization_id = $1', [
    organizationId,
  ]);
  await db.query(
    'DELETE FROM authorizations WHERE organization_id = $1 OR (resource_type = $2 AND resource_id = $3)',
    [organizationId, 'organization', organizationId],
  );
  await db.query('DELETE FROM organizations WHERE id = $1', [organizationId]);
}

export type MetadataTable = 'organizations' | 'locations' | 'robots' | 'robot_parts';

export async function readMetadata(
  db: Queryable,
  table: MetadataTable,
  organizationId: string,
  id: string,
): Promise<Record<string, unknown>> {
  const orgColumn = table === 'organizations' ? 'id' : 'organization_id';
  const result = await db.query<{ metadata: Record<string, unknown> }>(
    `SELECT metadata FROM ${table} WHERE id = $1 AND ${orgColumn} = $2`,
    [id, organizationId],
  );
  return result.rows[0]?.metadata ?? {};
}

export async function writeMetadata(
  db: Queryable,
  table: MetadataTable,
  organizationId: string,
  id: string,
  data: Record<string, unknown>,
): Promise<void> {
  const orgColumn = table === 'organizations' ? 'id' : 'organization_id';
  await db.query(`UPDATE ${table} SET metadata = $3 WHERE id = $1 AND ${orgColumn} = $2`, [
    id,
    organizationId,
    JSON.stringify(data),
  ]);
}
