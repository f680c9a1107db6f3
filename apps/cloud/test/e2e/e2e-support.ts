import { randomUUID } from 'node:crypto';
import { Code, createSdkClient, isSdkRpcError, type SdkTransportKind } from '@mcloud/sdk-testkit';
import type { ViamClient } from '@viamrobotics/sdk';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

/** A fresh test cloud plus an SDK client with its bootstrap (organization-owner) key. */
export interface SdkCloud {
  testCloud: TestCloud;
  client: ViamClient;
  organizationId: string;
  locationId: string;
  transport: SdkTransportKind;
  /** Another SDK client with the given key, over the same transport. */
  clientFor(apiKeyId: string, apiKey: string): Promise<ViamClient>;
  stop(): Promise<void>;
}

export async function startSdkCloud(
  transport: SdkTransportKind,
  options: Parameters<typeof startTestCloud>[0] = {},
): Promise<SdkCloud> {
  const testCloud = await startTestCloud(options);
  const { bootstrap, url } = testCloud;
  const clientFor = (apiKeyId: string, apiKey: string) =>
    createSdkClient({ url, apiKeyId, apiKey, transport });
  try {
    const client = await clientFor(bootstrap.api_key_id, bootstrap.api_key);
    return {
      testCloud,
      client,
      organizationId: bootstrap.organization_id,
      locationId: bootstrap.location_id,
      transport,
      clientFor,
      stop: () => testCloud.stop(),
    };
  } catch (error) {
    await testCloud.stop();
    throw error;
  }
}

export function randomId(): string {
  return randomUUID();
}

/** Retries `check` until it stops throwing or the deadline passes (for effects with a bounded delay). */
export async function eventually<T>(
  check: () => Promise<T>,
  timeoutMs = 5_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

/** Distinct bytes that look like a JPEG to anyone sniffing the header. */
export function fakeJpeg(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 17) & 0xff;
  bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
  return bytes;
}

// The SDK's declaration files use extension-less relative imports, which `moduleResolution: nodenext`
// cannot follow, so most SDK return types reach us as `any`. These are the shapes the tests rely on.
export interface Named {
  id: string;
  name: string;
}
export interface JsonStruct {
  toJson(): unknown;
}
export interface HistoryEntry {
  part: string;
  robot: string;
  when?: unknown;
  old?: { robotConfig?: JsonStruct };
}
export interface KeyEntry {
  apiKey?: { id: string; name: string };
  authorizations: { authorizationId: string; resourceType: string; resourceId: string }[];
}

export interface Machine {
  robotId: string;
  partId: string;
}

/**
 * A machine with its main part, made through the SDK's `newRobot` + `getRobotParts`. While AppService is not
 * implemented yet (`Unimplemented`), the rows are written directly (migration 0001 schema) so the data-plane
 * tests can run on their own.
 */
export async function createMachine(cloud: SdkCloud, locationId: string, name: string): Promise<Machine> {
  try {
    const robotId: string = await cloud.client.appClient.newRobot(locationId, name);
    const parts: { id: string; mainPart: boolean }[] = await cloud.client.appClient.getRobotParts(robotId);
    const main = parts.find((part) => part.mainPart);
    if (!main) throw new Error('newRobot made no main part');
    return { robotId, partId: main.id };
  } catch (error) {
    if (!isSdkRpcError(error) || error.code !== Code.Unimplemented) throw error;
  }
  const db = cloud.testCloud.cloud.deps.db;
  const location = await db.query<{ organization_id: string }>(
    'SELECT organization_id FROM locations WHERE id = $1',
    [locationId],
  );
  const organizationId = location.rows[0]?.organization_id;
  if (!organizationId) throw new Error(`no location ${locationId}`);
  const robotId = randomUUID();
  const partId = randomUUID();
  await db.query('INSERT INTO robots (id, organization_id, location_id, name) VALUES ($1, $2, $3, $4)', [
    robotId,
    organizationId,
    locationId,
    name,
  ]);
  await db.query(
    `INSERT INTO robot_parts (id, organization_id, location_id, robot_id, name, dns_name, main_part)
     VALUES ($1, $2, $3, $4, $5, $6, true)`,
    [partId, organizationId, locationId, robotId, `${name}-main`, `${name}-main-${partId.slice(0, 8)}`],
  );
  await db.query('INSERT INTO part_secrets (id, organization_id, part_id, secret) VALUES ($1, $2, $3, $4)', [
    randomUUID(),
    organizationId,
    partId,
    randomUUID(),
  ]);
  return { robotId, partId };
}

/** connect-node hands out `Buffer`s, connect-web plain `Uint8Array`s; compare contents, not prototypes. */
export function plainBytes(bytes: Uint8Array | undefined): Uint8Array | undefined {
  return bytes === undefined ? undefined : new Uint8Array(bytes);
}
