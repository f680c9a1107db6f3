import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/cloud-config.ts';
import { isDomainError } from '../domain/errors.ts';
import { createOrganizationWithOwnerKey } from '../domain/fleet/organization-setup.ts';
import { withTransaction } from '../infra/postgres/database.ts';
import { openDatabase } from '../infra/postgres/open-database.ts';

/**
 * `mcloud admin create-org`: a new organization with a location and an owner key, printed in the shape
 * of bootstrap.json. Works while the server runs: the embedded cluster is then already up, and we
 * connect to it through the URL in the data directory instead of starting a second one.
 */
export async function adminCreateOrgCommand(args: string[]): Promise<number> {
  let values: { name?: string; 'data-dir'?: string; 'database-url'?: string; json?: boolean };
  try {
    values = parseArgs({
      args,
      options: {
        name: { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        json: { type: 'boolean' },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (!values.name?.trim()) throw new ConfigError('--name is required (the new organization name)');
  const dataDir = path.resolve(values['data-dir'] ?? process.env.MCLOUD_DATA_DIR ?? './mcloud-data');
  const databaseUrl =
    values['database-url'] ?? process.env.DATABASE_URL ?? (await runningEmbeddedUrl(dataDir));
  const storage = await openDatabase({ databaseUrl, dataDir });
  try {
    const created = await withTransaction(storage.db, (client) =>
      createOrganizationWithOwnerKey(client, { name: values.name as string }),
    );
    const output = {
      url: await serverUrl(dataDir),
      organization_id: created.organizationId,
      location_id: created.locationId,
      api_key_id: created.apiKeyId,
      api_key: created.apiKey,
    };
    console.log(
      values.json
        ? JSON.stringify(output)
        : Object.entries(output)
            .map(([k, v]) => `${k.padEnd(16)}${v}`)
            .join('\n'),
    );
    return 0;
  } catch (error) {
    if (isDomainError(error)) {
      console.error(`mcloud: ${error.message}`);
      return 2;
    }
    throw error;
  } finally {
    await storage.close();
  }
}

/** The URL of an embedded cluster a running server owns (it holds postmaster.pid while up). */
async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  try {
    await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'));
    const credentials = JSON.parse(await readFile(path.join(dataDir, 'postgres-credentials.json'), 'utf8'));
    return `postgres://postgres:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/mcloud`;
  } catch {
    return undefined;
  }
}

async function serverUrl(dataDir: string): Promise<string> {
  try {
    return JSON.parse(await readFile(path.join(dataDir, 'bootstrap.json'), 'utf8')).url;
  } catch {
    return 'http://127.0.0.1:8080';
  }
}
