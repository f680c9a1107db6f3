import type { Queryable } from '../../infra/postgres/database.ts';
import type { ResourceType, Role } from '../auth/principal.ts';

export interface AuthorizationRecord {
  organizationId: string;
  identityType: 'api-key' | 'user';
  identityId: string;
  role: Role;
  resourceType: ResourceType;
  resourceId: string;
}

export interface ApiKeySummary {
  id: string;
  organizationId: string;
  name: string;
  createdAt: Date;
  authorizations: AuthorizationRecord[];
}

interface KeyRow {
  id: string;
  organization_id: string;
  name: string;
  created_at: Date;
  authorizations:
    | { organization_id: string; role: Role; resource_type: ResourceType; resource_id: string }[]
    | null;
}

const selectKey = `
  SELECT k.id, k.organization_id, k.name, k.created_at,
         (SELECT json_agg(json_build_object('organization_id', a.organization_id, 'role', a.role,
                                            'resource_type', a.resource_type, 'resource_id', a.resource_id) ORDER BY a.id)
            FROM authorizations a WHERE a.identity_type = 'api-key' AND a.identity_id = k.id::text) AS authorizations
    FROM api_keys k`;

function fromRow(row: KeyRow): ApiKeySummary {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    createdAt: row.created_at,
    authorizations: (row.authorizations ?? []).map((a) => ({
      organizationId: a.organization_id,
      identityType: 'api-key',
      identityId: row.id,
      role: a.role,
      resourceType: a.resource_type,
      resourceId: a.resource_id,
    })),
  };
}

export async function findKey(
  db: Queryable,
  id: string,
  organizationIds: readonly string[],
): Promise<ApiKeySummary | undefined> {
  const result = await db.query<KeyRow>(
    `${selectKey} WHERE k.id = $1 AND k.organization_id = ANY($2::uuid[])`,
    [id, organizationIds],
  );
  return result.rows[0] && fromRow(result.rows[0]);
}

export async function listKeys(db: Queryable, organizationId: string): Promise<ApiKeySummary[]> {
  const result = await db.query<KeyRow>(
    `${selectKey} WHERE k.organization_id = $1 ORDER BY k.created_at, k.id`,
    [organizationId],
  );
  return result.rows.map(fromRow);
}

export async function listKeysWithRobotAuthorization(
  db: Queryable,
  organizationId: string,
  robotId: string,
): Promise<ApiKeySummary[]> {
  const result = await db.query<KeyRow>(
    `${selectKey} WHERE k.organization_id = $1 AND EXISTS (
       SELECT 1 FROM authorizations a WHERE a.identity_type = 'api-key' AND a.identity_id = k.id::text
          AND a.organization_id = $1 AND a.resource_type = 'robot' AND a.resource_id = $2)
     ORDER BY k.created_at, k.id`,
    [organizationId, robotId],
  );
  return result.rows.map(fromRow);
}

export async function insertKey(
  db: Queryable,
  row: { id: string; organizationId: string; name: string; secretHash: Buffer; createdAt: Date },
): Promise<void> {
  await db.query(
    'INSERT INTO api_keys (id, organization_id, name, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.organizationId, row.name, row.secretHash, row.createdAt],
  );
}

export async function insertAuthorization(db: Queryable, a: AuthorizationRecord): Promise<void> {
  await db.query(
    `INSERT INTO authorizations (organization_id, identity_type, identity_id, role, resource_type, resource_id)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    [a.organizationId, a.identityType, a.identityId, a.role, a.resourceType, a.resourceId],
  );
}

export async function deleteAuthorization(db: Queryable, a: AuthorizationRecord): Promise<boolean> {
  const result = await db.query(
    `DELETE FROM authorizations WHERE organization_id = $1 AND identity_type = $2 AND identity_id = $3
        AND role = $4 AND resource_type = $5 AND resource_id = $6`,
    [a.organizationId, a.identityType, a.identityId, a.role, a.resourceType, a.resourceId],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function listAuthorizationsInOrganization(
  db: Queryable,
  organizationId: string,
): Promise<AuthorizationRecord[]> {
  const result = await db.query<{
    identity_type: 'api-key' | 'user';
    identity_id: string;
    role: Role;
    resource_type: ResourceType;
    resource_id: string;
  }>(
    `SELECT identity_type, identity_id, role, resource_type, resource_id FROM authorizations
      WHERE organization_id = $1 ORDER BY id`,
    [organizationId],
  );
  return result.rows.map((row) => ({
    organizationId,
    identityType: row.identity_type,
    identityId: row.identity_id,
    role: row.role,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
  }));
}

export async function deleteKeyRow(db: Queryable, organizationId: string, id: string): Promise<void> {
  await db.query("DELETE FROM authorizations WHERE identity_type = 'api-key' AND identity_id = $1", [id]);
  await db.query('DELETE FROM api_keys WHERE id = $1 AND organization_id = $2', [id, organizationId]);
}

export async function rotateKeySecret(
  db: Queryable,
  organizationId: string,
  id: string,
  secretHash: Buffer,
): Promise<void> {
  await db.query(
    'UPDATE api_keys SET secret_hash = $3, generation = generation + 1 WHERE id = $1 AND organization_id = $2',
    [id, organizationId, secretHash],
  );
}

export async function renameKeyRow(
  db: Queryable,
  organizationId: string,
  id: string,
  name: string,
): Promise<void> {
  await db.query('UPDATE api_keys SET name = $3 WHERE id = $1 AND organization_id = $2', [
    id,
    organizationId,
    name,
  ]);
}
