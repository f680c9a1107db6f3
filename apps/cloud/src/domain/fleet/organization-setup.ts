import type { DatabaseClient } from '../../infra/postgres/database.ts';
import { storeSealedApiKeySecret } from '../auth/sealed-api-key-secrets.ts';
import { generateSecret, hashSecret } from '../auth/secrets.ts';
import { newLocationId, newUuid } from '../shared/ids.ts';
import { requireName } from '../validate.ts';

export interface NewOrganizationWithOwnerKey {
  organizationId: string;
  locationId: string;
  apiKeyId: string;
  apiKey: string;
}

/**
 * Creates an organization with one location (and its location secret) and an organization-owner API
 * key, inside the caller's transaction. Used by first-start bootstrap and `mcloud admin create-org`.
 */
export async function createOrganizationWithOwnerKey(
  client: DatabaseClient,
  input: { name: string; locationName?: string },
): Promise<NewOrganizationWithOwnerKey> {
  const name = requireName('name', input.name);
  const organizationId = newUuid();
  const locationId = newLocationId();
  const apiKeyId = newUuid();
  const apiKey = generateSecret();
  await client.query('INSERT INTO organizations (id, name) VALUES ($1, $2)', [organizationId, name]);
  await client.query('INSERT INTO locations (id, organization_id, name) VALUES ($1, $2, $3)', [
    locationId,
    organizationId,
    input.locationName ?? 'default',
  ]);
  await client.query(
    'INSERT INTO location_secrets (id, organization_id, location_id, secret) VALUES ($1, $2, $3, $4)',
    [newUuid(), organizationId, locationId, generateSecret()],
  );
  await client.query(
    'INSERT INTO api_keys (id, organization_id, name, secret_hash) VALUES ($1, $2, $3, $4)',
    [apiKeyId, organizationId, `${name}-owner`, hashSecret(apiKey)],
  );
  await client.query(
    `INSERT INTO authorizations (organization_id, identity_type, identity_id, role, resource_type, resource_id)
     VALUES ($1::uuid, 'api-key', $2, 'owner', 'organization', $1::text)`,
    [organizationId, apiKeyId],
  );
  await storeSealedApiKeySecret(client, organizationId, apiKeyId, apiKey);
  return { organizationId, locationId, apiKeyId, apiKey };
}
