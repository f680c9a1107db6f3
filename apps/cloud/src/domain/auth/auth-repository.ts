import { randomBytes, randomUUID } from 'node:crypto';
import type { Queryable } from '../../infra/postgres/database.ts';
import type { SigningKey } from './access-token.ts';
import type { Grant } from './principal.ts';

export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  secretHash: Buffer;
  generation: number;
}

export interface PartSecretRecord {
  partId: string;
  robotId: string;
  locationId: string;
  organizationId: string;
  secrets: { id: string; secret: string }[];
}

/** Loads the shared signing keys, creating the first one (every replica then signs and verifies alike). */
export async function loadSigningKeys(db: Queryable): Promise<SigningKey[]> {
  await db.query('INSERT INTO signing_keys (id, secret) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    'k1',
    randomBytes(32),
  ]);
  const rows = await db.query<{ id: string; secret: Buffer }>('SELECT id, secret FROM signing_keys');
  return rows.rows.map((row) => ({ id: row.id, secret: row.secret }));
}

export async function findApiKey(db: Queryable, keyId: string): Promise<ApiKeyRecord | undefined> {
  const result = await db.query<{
    id: string;
    organization_id: string;
    secret_hash: Buffer;
    generation: number;
  }>('SELECT id, organization_id, secret_hash, generation FROM api_keys WHERE id = $1', [keyId]);
  const row = result.rows[0];
  return (
    row && {
      id: row.id,
      organizationId: row.organization_id,
      secretHash: row.secret_hash,
      generation: row.generation,
    }
  );
}

export async function listGrants(
  db: Queryable,
  identityType: 'api-key' | 'user',
  identityId: string,
): Promise<Grant[]> {
  const result = await db.query<{
    role: Grant['role'];
    resource_type: Grant['resourceType'];
    resource_id: string;
    organization_id: string;
  }>(
    'SELECT role, resource_type, resource_id, organization_id FROM authorizations WHERE identity_type = $1 AND identity_id = $2',
    [identityType, identityId],
  );
  return result.rows.map((row) => ({
    role: row.role,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    organizationId: row.organization_id,
  }));
}

export async function findPartWithSecrets(
  db: Queryable,
  partId: string,
): Promise<PartSecretRecord | undefined> {
  const result = await db.query<{
    id: string;
    robot_id: string;
    location_id: string;
    organization_id: string;
    secrets: { id: string; secret: string }[] | null;
  }>(
    `SELECT p.id, p.robot_id, p.location_id, p.organization_id,
            (SELECT json_agg(json_build_object('id', s.id, 'secret', s.secret)) FROM part_secrets s
              WHERE s.part_id = p.id AND s.state = 1) AS secrets
       FROM robot_parts p WHERE p.id = $1`,
    [partId],
  );
  const row = result.rows[0];
  return (
    row && {
      partId: row.id,
      robotId: row.robot_id,
      locationId: row.location_id,
      organizationId: row.organization_id,
      secrets: row.secrets ?? [],
    }
  );
}

export function newKeyId(): string {
  return randomUUID();
}
