import type { Queryable } from '../../infra/postgres/database.ts';

export interface RobotRecord {
  id: string;
  organizationId: string;
  locationId: string;
  name: string;
  createdAt: Date;
  /** The most recent access of any of its parts. */
  lastAccess: Date | null;
  /** The most recent access of its parts whose live stream has not ended since (see liveness.ts). */
  connectedLastAccess: Date | null;
}

interface RobotRow {
  id: string;
  organization_id: string;
  location_id: string;
  name: string;
  created_at: Date;
  last_access: Date | null;
  connected_last_access: Date | null;
}

const selectRobot = `
  SELECT r.id, r.organization_id, r.location_id, r.name, r.created_at,
         (SELECT max(p.last_access) FROM robot_parts p WHERE p.robot_id = r.id AND p.organization_id = r.organization_id) AS last_access,
         (SELECT max(p.last_access) FROM robot_parts p
           WHERE p.robot_id = r.id AND p.organization_id = r.organization_id AND p.disconnected_at IS NULL) AS connected_last_access
    FROM robots r`;

function fromRow(row: RobotRow): RobotRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    locationId: row.location_id,
    name: row.name,
    createdAt: row.created_at,
    lastAccess: row.last_access,
    connectedLastAccess: row.connected_last_access,
  };
}

export async function findRobot(
  db: Queryable,
  id: string,
  organizationIds: readonly string[],
): Promise<RobotRecord | undefined> {
  const result = await db.query<RobotRow>(
    `${selectRobot} WHERE r.id = $1 AND r.organization_id = ANY($2::uuid[])`,
    [id, organizationIds],
  );
  return result.rows[0] && fromRow(result.rows[0]);
}

export async function listRobotsInLocations(
  db: Queryable,
  organizationId: string,
  locationIds: readonly string[],
): Promise<RobotRecord[]> {
  const result = await db.query<RobotRow>(
    `${selectRobot} WHERE r.organization_id = $1 AND r.location_id = ANY($2::text[]) ORDER BY r.created_at, r.id`,
    [organizationId, locationIds],
  );
  return result.rows.map(fromRow);
}

export async function listRobotsInOrganization(
  db: Queryable,
  organizationId: string,
): Promise<RobotRecord[]> {
  const result = await db.query<RobotRow>(
    `${selectRobot} WHERE r.organization_id = $1 ORDER BY r.created_at, r.id`,
    [organizationId],
  );
  return result.rows.map(fromRow);
}

export async function insertRobot(
  db: Queryable,
  row: { id: string; organizationId: string; locationId: string; name: string; createdAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO robots (id, organization_id, location_id, name, created_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.organizationId, row.locationId, row.name, row.createdAt],
  );
}

/** Renames and/or moves a robot; its parts follow it to the new location. */
export async function updateRobotRow(
  db: Queryable,
  organizationId: string,
  id: string,
  changes: { name: string; locationId: string },
): Promise<void> {
  await db.query('UPDATE robots SET name = $3, location_id = $4 WHERE id = $1 AND organization_id = $2', [
    id,
    organizationId,
    changes.name,
    changes.locationId,
  ]);
  await db.query('UPDATE robot_parts SET location_id = $3 WHERE robot_id = $1 AND organization_id = $2', [
    id,
    organizationId,
    changes.locationId,
  ]);
}

export async function deleteRobotRow(db: Queryable, organizationId: string, id: string): Promise<void> {
  await db.query(
    "DELETE FROM authorizations WHERE organization_id = $1 AND resource_type = 'robot' AND resource_id = $2",
    [organizationId, id],
  );
  await db.query('DELETE FROM robots WHERE id = $1 AND organization_id = $2', [id, organizationId]);
}
