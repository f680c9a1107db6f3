/**
 * Issue 4, cloud item 1 + machine-server item 6 end to end: a real cloud (embedded PostgreSQL) and a
 * real machine-server process booted from it. The cloud's `Config` carries every API key authorized
 * for the machine at organization, location or machine level as an `api-key` auth handler, plus the
 * location secrets; the real SDK then dials the machine directly with each of them and reads a sensor.
 * A key authorized only for another location, and a wrong secret, are refused.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Code } from '@connectrpc/connect';
import { apiKeyRole } from '@mcloud/cloud/testing';
import type { SdkTransportKind } from '@mcloud/sdk-testkit';
import { type Credential, SensorClient } from '@viamrobotics/sdk';
import {
  type CloudPart,
  createCloudPart,
  credentialsFile,
  setPartConfig,
} from '../support/cloud-machine-fixtures.ts';
import { servingUrl, useCloudForMachines, withMachineClient } from '../support/cloud-machine-harness.ts';

const harness = useCloudForMachines();
let part: CloudPart;
let url: string;
const keys: Record<'organization' | 'location' | 'machine' | 'otherLocation', { id: string; key: string }> =
  {} as never;

before(async () => {
  const t = await harness.cloud();
  part = await createCloudPart(t, 'auth-machine');
  const orgId = t.bootstrap.organization_id;
  await setPartConfig(part, {
    components: [
      { name: 'thermo', api: 'rdk:component:sensor', model: 'fake', attributes: { readings: { temp: 21 } } },
    ],
  });
  const { location: elsewhere } = await part.owner.app.createLocation({ organizationId: orgId, name: 'far' });
  const create = async (name: string, authorization: ReturnType<typeof apiKeyRole>) => {
    const created = await part.owner.app.createKey({ name, authorizations: [authorization] });
    return { id: created.id, key: created.key };
  };
  keys.organization = { id: t.bootstrap.api_key_id, key: t.bootstrap.api_key };
  keys.location = await create('loc', apiKeyRole('location', 'operator', t.bootstrap.location_id, orgId));
  keys.machine = await create('robot', apiKeyRole('robot', 'operator', part.robotId, orgId));
  keys.otherLocation = await create('far', apiKeyRole('location', 'owner', elsewhere?.id as string, orgId));

  const machine = await harness.startMachine({
    // The SDK dials only hosts containing "local" directly.
    config: { ...credentialsFile(t.url, part, '1s'), network: { bind_address: 'localhost:0' } },
    args: ['-disable-mdns'],
  });
  await machine.waitForLine(/initial configuration applied/);
  url = await servingUrl(machine);
});

function readThermo(credentials: Credential, transport: SdkTransportKind): Promise<unknown> {
  return withMachineClient(
    url,
    credentials,
    (client) => new SensorClient(client, 'thermo').getReadings(),
    transport,
  );
}

/** The SDK's direct dial wraps the Authenticate failure: "Failed to connect via all methods" + causes. */
function assertRefused(error: unknown, context: string): void {
  const causes = (error as { cause?: unknown }).cause;
  const codes = (Array.isArray(causes) ? causes : [error]).map((cause) => (cause as { code?: unknown }).code);
  assert.ok(codes.includes(Code.Unauthenticated), `${context}: ${String(error)} (codes ${codes.join(',')})`);
}

async function expectRefused(dial: Promise<unknown>, context: string): Promise<void> {
  const outcome = await dial.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  assert.ok('error' in outcome, `${context}: dialled and read ${JSON.stringify(outcome)}`);
  assertRefused(outcome.error, context);
}

test('API keys authorized at organization, location and machine level dial the machine (gRPC and gRPC-web)', async () => {
  for (const level of ['organization', 'location', 'machine'] as const) {
    for (const transport of ['grpc', 'grpc-web'] as const) {
      const { id, key } = keys[level];
      assert.deepEqual(
        await readThermo({ type: 'api-key', authEntity: id, payload: key }, transport),
        { temp: 21 },
        `${level} key over ${transport}`,
      );
    }
  }
});

test("a key of another location, a wrong key and a wrong location secret are refused; the location's secret works", async () => {
  const other = keys.otherLocation;
  await expectRefused(
    readThermo({ type: 'api-key', authEntity: other.id, payload: other.key }, 'grpc'),
    'key of another location',
  );
  await expectRefused(
    readThermo({ type: 'api-key', authEntity: keys.machine.id, payload: `${keys.machine.key}x` }, 'grpc'),
    'wrong key',
  );
  const { auth } = await part.owner.app.locationAuth({
    locationId: (await harness.cloud()).bootstrap.location_id,
  });
  const secret = auth?.secrets[0]?.secret;
  assert.ok(secret, 'the location has a secret');
  // Without an auth entity the SDK uses the host it dials, one of the machine's names.
  assert.deepEqual(
    await readThermo({ type: 'robot-location-secret', authEntity: '', payload: secret }, 'grpc-web'),
    { temp: 21 },
  );
  await expectRefused(
    readThermo({ type: 'robot-location-secret', authEntity: '', payload: `${secret}x` }, 'grpc-web'),
    'wrong location secret',
  );
});

test('a key created while the machine runs works after the next configuration check', async () => {
  const late = await part.owner.app.createKey({
    name: 'late',
    authorizations: [
      apiKeyRole('robot', 'owner', part.robotId, (await harness.cloud()).bootstrap.organization_id),
    ],
  });
  const credentials: Credential = { type: 'api-key', authEntity: late.id, payload: late.key };
  const deadline = Date.now() + 15_000;
  for (;;) {
    const outcome = await readThermo(credentials, 'grpc').catch((error: Error) => error);
    if (!(outcome instanceof Error)) {
      assert.deepEqual(outcome, { temp: 21 });
      break;
    }
    if (Date.now() > deadline) throw outcome;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  // Deleting the key takes it away from the machine again.
  await part.owner.app.deleteKey({ id: late.id });
  const gone = Date.now() + 15_000;
  for (;;) {
    const outcome = await readThermo(credentials, 'grpc').catch((error: Error) => error);
    if (outcome instanceof Error) {
      assertRefused(outcome, 'deleted key');
      break;
    }
    if (Date.now() > gone) assert.fail('the deleted key still dials the machine');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
});

test('a machine-server with api_key credentials (a machine owner key) boots from the cloud', async () => {
  const t = await harness.cloud();
  const ownerKey = await part.owner.app.createKey({
    name: 'machine-credentials',
    authorizations: [apiKeyRole('robot', 'owner', part.robotId, t.bootstrap.organization_id)],
  });
  const keyed = await harness.startMachine({
    config: {
      cloud: { app_address: t.url, id: part.partId, api_key: { id: ownerKey.id, key: ownerKey.key } },
    },
    args: ['-disable-mdns'],
    env: { MCLOUD_MACHINE_CONNECTION: 'off' },
  });
  const applied = await keyed.waitForLine(/initial configuration applied/);
  assert.match(applied, /"built":1,"failed":0/);
  assert.ok(!keyed.lines.some((line) => /using cached version/.test(line)), 'fetched from the cloud');
  assert.equal(await keyed.stop(), 0);
});
