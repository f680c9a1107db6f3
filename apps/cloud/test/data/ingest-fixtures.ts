import { randomBytes, randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import {
  anyPack,
  StringValueSchema,
  type Timestamp,
  timestampFromMs,
  ValueSchema,
} from '@bufbuild/protobuf/wkt';
import { type Client, createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { authPb, dataSyncPb } from '@mcloud/protocol';
import { createOrganizationWithOwnerKey } from '../../src/domain/fleet/organization-setup.ts';
import { newObjectId } from '../../src/domain/shared/ids.ts';
import { withTransaction } from '../../src/infra/postgres/database.ts';
import type { TestCloud } from '../support/test-cloud.ts';

/** Test helpers for the ingest suites: parts, datasets, clients and request builders. */

export type DataSyncClient = Client<typeof dataSyncPb.DataSyncService>;

export async function tokenFor(
  url: string,
  credentials: { type: 'api-key' | 'robot-secret'; entity: string; payload: string },
): Promise<string> {
  const auth = createClient(authPb.AuthService, createGrpcTransport({ baseUrl: url }));
  const response = await auth.authenticate({
    entity: credentials.entity,
    credentials: { type: credentials.type, payload: credentials.payload },
  });
  return response.accessToken;
}

export function dataSyncClient(url: string, accessToken: string): DataSyncClient {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${accessToken}`);
    return next(req);
  };
  return createClient(
    dataSyncPb.DataSyncService,
    createGrpcTransport({ baseUrl: url, interceptors: [bearer] }),
  );
}

export async function apiKeyClient(t: TestCloud): Promise<DataSyncClient> {
  const token = await tokenFor(t.url, {
    type: 'api-key',
    entity: t.bootstrap.api_key_id,
    payload: t.bootstrap.api_key,
  });
  return dataSyncClient(t.url, token);
}

export interface TestPart {
  organizationId: string;
  locationId: string;
  robotId: string;
  partId: string;
  secret: string;
}

/** A machine with one main part (and a part secret) inserted directly. */
export async function createTestPart(
  t: TestCloud,
  organizationId: string,
  locationId: string,
): Promise<TestPart> {
  const robotId = randomUUID();
  const partId = randomUUID();
  const secret = randomBytes(24).toString('hex');
  const db = t.cloud.deps.db;
  await db.query('INSERT INTO robots (id, organization_id, location_id, name) VALUES ($1, $2, $3, $4)', [
    robotId,
    organizationId,
    locationId,
    `robot-${robotId.slice(0, 8)}`,
  ]);
  await db.query(
    `INSERT INTO robot_parts (id, organization_id, location_id, robot_id, name, dns_name, main_part)
     VALUES ($1, $2, $3, $4, 'main', $5, true)`,
    [partId, organizationId, locationId, robotId, `part-${partId}`],
  );
  await db.query('INSERT INTO part_secrets (id, organization_id, part_id, secret) VALUES ($1, $2, $3, $4)', [
    randomUUID(),
    organizationId,
    partId,
    secret,
  ]);
  return { organizationId, locationId, robotId, partId, secret };
}

export async function createSecondOrganization(t: TestCloud) {
  return withTransaction(t.cloud.deps.db, (client) =>
    createOrganizationWithOwnerKey(client, { name: `other-${randomUUID().slice(0, 8)}` }),
  );
}

export async function createTestDataset(t: TestCloud, organizationId: string, name: string): Promise<string> {
  const id = newObjectId();
  await t.cloud.deps.db.query('INSERT INTO datasets (id, organization_id, name) VALUES ($1, $2, $3)', [
    id,
    organizationId,
    name,
  ]);
  return id;
}

export function ts(ms: number): Timestamp {
  return timestampFromMs(ms);
}

export function uploadMetadata(
  partId: string,
  overrides: Partial<Omit<dataSyncPb.UploadMetadata, '$typeName'>> = {},
): dataSyncPb.UploadMetadata {
  return create(dataSyncPb.UploadMetadataSchema, {
    partId,
    componentType: 'rdk:component:sensor',
    componentName: 'my-sensor',
    methodName: 'Readings',
    type: dataSyncPb.DataType.TABULAR_SENSOR,
    ...overrides,
  });
}

export const valueParameter = (value: string | number | boolean) =>
  anyPack(
    ValueSchema,
    create(ValueSchema, {
      kind:
        typeof value === 'string'
          ? { case: 'stringValue', value }
          : typeof value === 'number'
            ? { case: 'numberValue', value }
            : { case: 'boolValue', value },
    }),
  );

export const stringWrapperParameter = (value: string) =>
  anyPack(StringValueSchema, create(StringValueSchema, { value }));

/** All files under the fs blob store's root (for "one blob stored" assertions). */
export async function listBlobFiles(t: TestCloud): Promise<string[]> {
  const root = path.join(t.dataDir, 'blobs');
  try {
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  } catch {
    return [];
  }
}

export async function* messages<T>(items: readonly T[]): AsyncIterable<T> {
  for (const item of items) yield item;
}
