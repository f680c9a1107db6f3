import type { Queryable } from '../../infra/postgres/database.ts';
import { notifyMachine } from '../machines/machine-notifications.ts';
import type { SharedSecretRecord } from './locations-repository.ts';

export interface PartRecord {
  id: string;
  organizationId: string;
  locationId: string;
  robotId: string;
  name: string;
  dnsName: string;
  mainPart: boolean;
  config: Record<string, unknown>;
  revision: number;
  lastUpdated: Date;
  lastAccess: Date | null;
  /** Set when the part's live stream ended (it shows offline at once); cleared at the next contact. */
  disconnectedAt: Date | null;
  userSuppliedInfo: Record<string, unknown> | null;
  createdAt: Date;
  needsRestart: boolean;
  /** Enabled secrets, oldest first; the first one is the legacy `RobotPart.secret`. */
  secrets: SharedSecretRecord[];
}

export type EditorType = 'api-key' | 'part-secret';

export interface PartHistoryRecord {
  partId: string;
  robotId: string;
  editedAt: Date;
  editedBy: { type: EditorType; value: string };
  /** The full part state before the edit (secrets are not kept in history). */
  old: PartRecord;
}

interface PartRow {
  id: string;
  organization_id: string;
  location_id: string;
  robot_id: string;
  name: string;
  dns_name: string;
  main_part: boolean;
  config: Record<string, unknown>;
  revision: string;
  last_updated: Date;
  last_access: Date | null;
  disconnected_at: Date | null;
  user_supplied_info: Record<string, unknown> | null;
  created_at: Date;
  needs_restart: boolean;
  secrets: { id: string; secret: string; created_at: string; state: number }[] | null;
}

const selectPart = `
  SELECT p.id, p.organization_id, p.location_id, p.robot_id, p.name, p.dns_name, p.main_part, p.config, p.revision,
         p.last_updated, p.last_access, p.disconnected_at, p.user_supplied_info, p.created_at, p.needs_restart,
         (SELECT json_agg(json_build_object('id', s.id, 'secret', s.secret, 'created_at', s.created_at, 'state', s.state)
                          ORDER BY s.created_at, s.id)
            FROM part_secrets s WHERE s.part_id = p.id AND s.organization_id = p.organization_id AND s.state = 1) AS secrets
    FROM robot_parts p`;

function fromRow(row: PartRow): PartRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    locationId: row.location_id,
    robotId: row.robot_id,
    name: row.name,
    dnsName: row.dns_name,
    mainPart: row.main_part,
    config: row.config,
    revision: Number(row.revision),
    lastUpdated: row.last_updated,
    lastAccess: row.last_access,
    disconnectedAt: row.disconnected_at,
    userSuppliedInfo: row.user_supplied_info,
    createdAt: row.created_at,
    needsRestart: row.needs_restart,
    secrets: (row.secrets ?? []).map((s) => ({
      id: s.id,
      secret: s.secret,
      createdAt: new Date(s.created_at),
      enabled: s.state === 1,
    })),
  };
}

export async function findPart(
  db: Queryable,
  id: string,
  organizationIds: readonly string[],
  options: { forUpdate?: boolean } = {},
): Promise<PartRecord | undefined> {
  const lock = options.forUpdate ? ' FOR UPDATE OF p' : '';
  const result = await db.query<PartRow>(
    `${selectPart} WHERE p.id = $1 AND p.organization_id = ANY($2::uuid[])${lock}`,
    [id, organizationIds],
  );
  return result.rows[0] && fromRow(result.rows[0]);
}

export async function listPartsOfRobot(
  db: Queryable,
  organizationId: string,
  robotId: string,
): Promise<PartRecord[]> {
  const result = await db.query<PartRow>(
    `${selectPart} WHERE p.robot_id = $1 AND p.organization_id = $2 ORDER BY p.main_part DESC, p.created_at, p.id`,
    [robotId, organizationId],
  );
  return result.rows.map(fromRow);
}

export async function findPartsByNameInLocation(
  db: Queryable,
  organizationId: string,
  locationId: string,
  name: string,
): Promise<PartRecord[]> {
  const result = await db.query<PartRow>(
    `${selectPart} WHERE p.organization_id = $1 AND p.location_id = $2 AND p.name = $3 ORDER BY p.main_part DESC, p.created_at, p.id`,
    [organizationId, locationId, name],
  );
  return result.rows.map(fromRow);
}

export async function isDnsNameTaken(db: Queryable, dnsName: string): Promise<boolean> {
  // dns_name is unique across the whole cloud (it is part of the machine's address).
  const result = await db.query('SELECT 1 FROM robot_parts WHERE dns_name = $1', [dnsName]);
  return (result.rowCount ?? 0) > 0;
}

export async function insertPart(
  db: Queryable,
  row: {
    id: string;
    organizationId: string;
    locationId: string;
    robotId: string;
    name: string;
    dnsName: string;
    mainPart: boolean;
    createdAt: Date;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO robot_parts (id, organization_id, location_id, robot_id, name, dns_name, main_part, created_at, last_updated)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
    [
      row.id,
      row.organizationId,
      row.locationId,
      row.robotId,
      row.name,
      row.dnsName,
      row.mainPart,
      row.createdAt,
    ],
  );
}

export async function insertPartSecret(
  db: Queryable,
  row: { id: string; organizationId: string; partId: string; secret: string; createdAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO part_secrets (id, organization_id, part_id, secret, created_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.organizationId, row.partId, row.secret, row.createdAt],
  );
}

export async function deletePartSecretRow(
  db: Queryable,
  organizationId: string,
  partId: string,
  secretId: string,
): Promise<boolean> {
  const result = await db.query(
    'DELETE FROM part_secrets WHERE id = $1 AND part_id = $2 AND organization_id = $3',
    [secretId, partId, organizationId],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function updatePartConfig(
  db: Queryable,
  organizationId: string,
  id: string,
  change: { name: string; config: Record<string, unknown>; updatedAt: Date },
): Promise<void> {
  const result = await db.query<{ revision: string }>(
    'UPDATE robot_parts SET name = $3, config = $4, last_updated = $5, revision = revision + 1 WHERE id = $1 AND organization_id = $2 RETURNING revision',
    [id, organizationId, change.name, JSON.stringify(change.config), change.updatedAt],
  );
  // Delivered on commit to the replica holding the part's live stream (configuration push).
  const revision = result.rows[0]?.revision;
  if (revision !== undefined) {
    await notifyMachine(db, {
      kind: 'config-changed',
      o: organizationId,
      p: id,
      revision,
      at: change.updatedAt.getTime(),
    });
  }
}

export async function setMainPart(
  db: Queryable,
  organizationId: string,
  robotId: string,
  partId: string,
): Promise<void> {
  // Two statements so the partial unique index (one main part per robot) never sees two mains.
  await db.query(
    'UPDATE robot_parts SET main_part = false WHERE robot_id = $1 AND organization_id = $2 AND main_part AND id <> $3',
    [robotId, organizationId, partId],
  );
  await db.query('UPDATE robot_parts SET main_part = true WHERE id = $1 AND organization_id = $2', [
    partId,
    organizationId,
  ]);
}

export async function setNeedsRestart(
  db: Queryable,
  organizationId: string,
  partId: string,
  value: boolean,
): Promise<void> {
  await db.query('UPDATE robot_parts SET needs_restart = $3 WHERE id = $1 AND organization_id = $2', [
    partId,
    organizationId,
    value,
  ]);
}

export async function deletePartRow(db: Queryable, organizationId: string, partId: string): Promise<void> {
  await db.query('DELETE FROM robot_parts WHERE id = $1 AND organization_id = $2', [partId, organizationId]);
}

function snapshotOf(part: PartRecord): Record<string, unknown> {
  const { secrets: _secrets, ...rest } = part;
  return rest as unknown as Record<string, unknown>;
}

function partFromSnapshot(snapshot: Record<string, unknown>): PartRecord {
  const date = (value: unknown) => (typeof value === 'string' ? new Date(value) : null);
  return {
    ...(snapshot as unknown as PartRecord),
    lastUpdated: date(snapshot.lastUpdated) ?? new Date(0),
    lastAccess: date(snapshot.lastAccess),
    disconnectedAt: date(snapshot.disconnectedAt),
    createdAt: date(snapshot.createdAt) ?? new Date(0),
    secrets: [],
  };
}

export async function insertPartHistory(
  db: Queryable,
  entry: { old: PartRecord; editedAt: Date; editedBy: { type: EditorType; value: string } },
): Promise<void> {
  await db.query(
    `INSERT INTO part_history (organization_id, part_id, robot_id, edited_at, edited_by_type, edited_by_value, old_part)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      entry.old.organizationId,
      entry.old.id,
      entry.old.robotId,
      entry.editedAt,
      entry.editedBy.type === 'api-key' ? 2 : 3,
      entry.editedBy.value,
      JSON.stringify(snapshotOf(entry.old)),
    ],
  );
}

/** Newest first. */
export async function listPartHistory(
  db: Queryable,
  organizationId: string,
  partId: string,
  limit: number,
): Promise<PartHistoryRecord[]> {
  const result = await db.query<{
    part_id: string;
    robot_id: string;
    edited_at: Date;
    edited_by_type: number;
    edited_by_value: string;
    old_part: Record<string, unknown>;
  }>(
    `SELECT part_id, robot_id, edited_at, edited_by_type, edited_by_value, old_part FROM part_history
      WHERE part_id = $1 AND organization_id = $2 ORDER BY id DESC LIMIT $3`,
    [partId, organizationId, limit],
  );
  return result.rows.map((row) => ({
    partId: row.part_id,
    robotId: row.robot_id,
    editedAt: row.edited_at,
    editedBy: { type: row.edited_by_type === 2 ? 'api-key' : 'part-secret', value: row.edited_by_value },
    old: partFromSnapshot(row.old_part),
  }));
}
