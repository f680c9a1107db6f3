import type { Queryable } from '../../infra/postgres/database.ts';

export interface SharedSecretRecord {
  id: string;
  secret: string;
  createdAt: Date;
  enabled: boolean;
}

export interface LocationRecord {
  id: string;
  organizationId: string;
  name: string;
  parentLocationId: string | null;
  region: string;
  createdAt: Date;
  robotCount: number;
  /** Oldest first; the first enabled one is the legacy `LocationAuth.secret`. */
  secrets: SharedSecretRecord[];
}

interface LocationRow {
  id: string;
  organization_id: string;
  name: string;
  parent_location_id: string | null;
  region: string;
  created_at: Date;
  robot_count: number;
  secrets: { id: string; secret: string; created_at: string; state: number }[] | null;
}

const selectLocation = `
  SELECT l.id, l.organization_id, l.name, l.parent_location_id, l.region, l.created_at,
         (SELECT count(*)::int FROM robots r WHERE r.location_id = l.id AND r.organization_id = l.organization_id) AS robot_count,
         (SELECT json_agg(json_build_object('id', s.id, 'secret', s.secret, 'created_at', s.created_at, 'state', s.state)
                          ORDER BY s.created_at, s.id)
            FROM location_secrets s WHERE s.location_id = l.id AND s.organization_id = l.organization_id AND s.state = 1) AS secrets
    FROM locations l`;

function fromRow(row: LocationRow): LocationRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    parentLocationId: row.parent_location_id,
    region: row.region,
    createdAt: row.created_at,
    robotCount: row.robot_count,
    secrets: (row.secrets ?? []).map((s) => ({
      id: s.id,
      secret: s.secret,
      createdAt: new Date(s.created_at),
      enabled: s.state === 1,
    })),
  };
}

/** A location, only if it belongs to one of `organizationIds`. */
export async function findLocation(
  db: Queryable,
  id: string,
  organizationIds: readonly string[],
): Promise<LocationRecord | undefined> {
  const result = await db.query<LocationRow>(
    `${selectLocation} WHERE l.id = $1 AND l.organization_id = ANY($2::uuid[])`,
    [id, organizationIds],
  );
  return result.rows[0] && fromRow(result.rows[0]);
}

export async function listLocations(db: Queryable, organizationId: string): Promise<LocationRecord[]> {
  const result = await db.query<LocationRow>(
    `${selectLocation} WHERE l.organization_id = $1 ORDER BY l.created_at, l.id`,
    [organizationId],
  );
  return result.rows.map(fromRow);
}

export async function insertLocation(
  db: Queryable,
  row: { id: string; organizationId: string; name: string; parentLocationId: string | null; createdAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO locations (id, organization_id, name, parent_location_id, created_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.organizationId, row.name, row.parentLocationId, row.createdAt],
  );
}

export async function updateLocation(
  db: Queryable,
  organizationId: string,
  id: string,
  changes: { name?: string; parentLocationId?: string | null; region?: string },
): Promise<void> {
  await db.query(
    `UPDATE locations SET
       name = COALESCE($3, name),
       parent_location_id = CASE WHEN $4 THEN $5 ELSE parent_location_id END,
       region = COALESCE($6, region)
     WHERE id = $1 AND organization_id = $2`,
    [
      id,
      organizationId,
      changes.name ?? null,
      changes.parentLocationId !== undefined,
      changes.parentLocationId ?? null,
      changes.region ?? null,
    ],
  );
}

/** Whether `ancestorId` is `locationId` or one of its ancestors (guards against parent cycles). */
export async function isSelfOrAncestor(
  db: Queryable,
  organizationId: string,
  locationId: string,
  ancestorId: string,
): Promise<boolean> {
  const result = await db.query(
    `WITH RECURSIVE chain(id, parent) AS (
       SELECT id, parent_location_id FROM locations WHERE id = $1 AND organization_id = $2
       UNION SELECT l.id, l.parent_location_id FROM locations l JOIN chain c ON l.id = c.parent WHERE l.organization_id = $2
     ) SELECT 1 FROM chain WHERE id = $3`,
    [locationId, organizationId, ancestorId],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function countChildLocations(
  db: Queryable,
  organizationId: string,
  id: string,
): Promise<number> {
  const result = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM locations WHERE parent_location_id = $1 AND organization_id = $2',
    [id, organizationId],
  );
  return result.rows[0]?.n ?? 0;
}

export async function deleteLocationRow(db: Queryable, organizationId: string, id: string): Promise<void> {
  await db.query(
    "DELETE FROM authorizations WHERE organization_id = $1 AND resource_type = 'location' AND resource_id = $2",
    [organizationId, id],
  );
  await db.query('DELETE FROM locations WHERE id = $1 AND organization_id = $2', [id, organizationId]);
}

export async function insertLocationSecret(
  db: Queryable,
  row: { id: string; organizationId: string; locationId: string; secret: string; createdAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO location_secrets (id, organization_id, location_id, secret, created_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.organizationId, row.locationId, row.secret, row.createdAt],
  );
}

export async function deleteLocationSecretRow(
  db: Queryable,
  organizationId: string,
  locationId: string,
  secretId: string,
): Promise<boolean> {
  const result = await db.query(
    'DELETE FROM location_secrets WHERE id = $1 AND location_id = $2 AND organization_id = $3',
    [secretId, locationId, organizationId],
  );
  return (result.rowCount ?? 0) > 0;
}
