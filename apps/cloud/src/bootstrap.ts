import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createOrganizationWithOwnerKey } from './domain/fleet/organization-setup.ts';
import { type Database, withTransaction } from './infra/postgres/database.ts';

export interface BootstrapFile {
  url: string;
  organization_id: string;
  location_id: string;
  api_key_id: string;
  api_key: string;
}

/**
 * On the first start against an empty database: organization `default`, location `default` and an
 * owner API key, written to `<dataDir>/bootstrap.json` (owner-only) so the operator can log in.
 */
export async function bootstrapIfEmpty(
  db: Database,
  dataDir: string,
  url: string,
): Promise<BootstrapFile | undefined> {
  const created = await withTransaction(db, async (client) => {
    // Serialises replicas starting together; only the first one sees an empty database.
    await client.query('LOCK TABLE organizations IN EXCLUSIVE MODE');
    const existing = await client.query('SELECT 1 FROM organizations LIMIT 1');
    if (existing.rowCount) return undefined;
    return createOrganizationWithOwnerKey(client, { name: 'default' });
  });
  if (!created) return undefined;
  const file: BootstrapFile = {
    url,
    organization_id: created.organizationId,
    location_id: created.locationId,
    api_key_id: created.apiKeyId,
    api_key: created.apiKey,
  };
  await writeFile(path.join(dataDir, 'bootstrap.json'), `${JSON.stringify(file, null, 2)}\n`, {
    mode: 0o600,
  });
  return file;
}
