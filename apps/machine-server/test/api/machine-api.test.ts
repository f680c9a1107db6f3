import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Code, type ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { authPb, genericPb, machineRobotPb, motorPb, sensorPb } from '@mcloud/protocol';
import { createSdkRobotClient, expectRpcError, sdkTransportKinds, structFromJson } from '@mcloud/sdk-testkit';
import {
  CameraClient,
  createRobotClient,
  GenericComponentClient,
  MotorClient,
  type RobotClient,
  SensorClient,
} from '@viamrobotics/sdk';
import { createMachineApi, type MachineApi } from '../../src/api/machine-api.ts';
import { sensorApi } from '../../src/resources/apis/sensor.ts';
import { createResourceName } from '../../src/resources/resource-name.ts';
import { createFakeMachineHost, type FakeMachineHost } from './support/fake-machine-host.ts';
import {
  handBuiltCamera,
  handBuiltGeneric,
  handBuiltMotor,
  handBuiltSensor,
  tinyPng,
} from './support/hand-built-resources.ts';

const apiKeyId = 'key-id-1';
const apiKey = 'the-api-key-secret-value';
const locationSecret = 'the-location-secret';

const motor = handBuiltMotor('wheel');
let readingsCount = 0;
let host: FakeMachineHost;
let api: MachineApi;
let url: string;

before(async () => {
  host = createFakeMachineHost({
    config: {
      cloud: {
        id: 'part-1',
        secret: 'part-secret',
        fqdn: 'my-machine-main.loc1.example.cloud',
        local_fqdn: 'my-machine-main.loc1.local.example.cloud',
        location_secrets: [{ id: 'ls1', secret: locationSecret }],
        location_id: 'loc-1',
        primary_org_id: 'org-1',
        machine_id: 'machine-1',
      },
      network: { bind_address: 'localhost:0' },
      auth: { handlers: [{ type: 'api-key', config: { [apiKeyId]: apiKey, keys: [apiKeyId] } }] },
      revision: 'rev-7',
    },
    resources: [
      handBuiltSensor('thermo', () => ({
        celsius: 21.5,
        count: ++readingsCount,
        tags: ['a', 'b'],
        nested: { ok: true },
      })),
      handBuiltCamera('cam'),
      motor,
      handBuiltGeneric('gen'),
    ],
    unhealthy: [{ name: createResourceName(sensorApi, 'broken'), error: 'unknown model "rdk:builtin:nope"' }],
  });
  api = createMachineApi();
  await api.start?.(host, AbortSignal.timeout(10_000));
  url = api.address()?.url ?? '';
  assert.match(url, /^http:\/\/localhost:\d+$/);
});
after(() => api.stop?.(AbortSignal.timeout(10_000)));

for (const transport of sdkTransportKinds) {
  describe(`SDK robot client dialled directly over ${transport}`, () => {
    let client: RobotClient;
    before(async () => {
      client = await createSdkRobotClient({
        host: url,
        transport,
        credentials: { type: 'api-key', authEntity: apiKeyId, payload: apiKey },
      });
    });
    after(() => client.disconnect());

    test('reads a sensor', async () => {
      const readings = await new SensorClient(client, 'thermo').getReadings();
      assert.equal(readings.celsius, 21.5);
      assert.deepEqual(readings.tags, ['a', 'b']);
      assert.deepEqual(readings.nested, { ok: true });
      assert.ok(typeof readings.count === 'number' && readings.count >= 1);
    });

    test('gets camera images', async () => {
      const { images, metadata } = await new CameraClient(client, 'cam').getImages();
      assert.equal(images.length, 1);
      assert.equal(images[0]?.sourceName, 'cam');
      assert.equal(images[0]?.mimeType, 'image/png');
      assert.deepEqual(Buffer.from(images[0]?.image ?? []), tinyPng);
      assert.equal(metadata.capturedAt?.toDate().toISOString(), '2026-01-02T03:04:05.000Z');
    });

    test('DoCommand on a generic component, a sensor and a motor', async () => {
      assert.deepEqual(
        await new GenericComponentClient(client, 'gen').doCommand(structFromJson({ hello: 'world', n: 2 })),
        {
          command: { hello: 'world', n: 2 },
          extra: {},
        },
      );
      assert.deepEqual(await new SensorClient(client, 'thermo').doCommand(structFromJson({ ping: 1 })), {
        echo: { ping: 1 },
      });
      assert.deepEqual(await new MotorClient(client, 'wheel').doCommand(structFromJson({ x: true })), {
        motor: 'wheel',
        received: { x: true },
      });
    });

    test('drives a motor and StopAll stops it', async () => {
      const wheel = new MotorClient(client, 'wheel');
      await wheel.setPower(0.5);
      assert.deepEqual(await wheel.isPowered(), [true, 0.5]);
      assert.equal(await wheel.isMoving(), true);
      await wheel.goTo(60, 3);
      assert.equal(await wheel.getPosition(), 3);
      await client.stopAll();
      assert.equal(await wheel.isMoving(), false);
      await expectRpcError(wheel.setPower(2), Code.InvalidArgument);
    });

    test('ResourceNames, GetMachineStatus with an unhealthy resource, metadata, version', async () => {
      const names = (await client.resourceNames())
        .map((name: { subtype: string; name: string }) => `${name.subtype}/${name.name}`)
        .sort();
      assert.deepEqual(names, ['camera/cam', 'generic/gen', 'motor/wheel', 'sensor/thermo']);
      const status = await client.getMachineStatus();
      assert.equal(status.config?.revision, 'rev-7');
      assert.equal(status.state, 2); // RUNNING
      type Status = { name?: { name: string }; state: number; error: string; revision: string };
      const broken = (status.resources as Status[]).find((resource) => resource.name?.name === 'broken');
      assert.equal(broken?.state, 5); // UNHEALTHY
      assert.equal(broken?.error, 'unknown model "rdk:builtin:nope"');
      const ready = (status.resources as Status[]).find((resource) => resource.name?.name === 'thermo');
      assert.equal(ready?.state, 3); // READY
      assert.equal(ready?.revision, 'rev-7');
      const metadata = await client.getCloudMetadata();
      assert.deepEqual(
        [metadata.primaryOrgId, metadata.locationId, metadata.machineId, metadata.machinePartId],
        ['org-1', 'loc-1', 'machine-1', 'part-1'],
      );
      const version = await client.getVersion();
      assert.equal(version.apiVersion, 'v0.1.512');
      assert.equal(version.version, '0.1.0-test');
      assert.match(version.platform, /^\w+\/\w+$/);
    });

    test('an unhealthy resource answers Unavailable with its reason; an unknown one NotFound', async () => {
      const error = await expectRpcError(new SensorClient(client, 'broken').getReadings(), Code.Unavailable);
      assert.match(error.rawMessage, /unknown model "rdk:builtin:nope"/);
      await expectRpcError(new SensorClient(client, 'nobody').getReadings(), Code.NotFound);
    });
  });
}

describe('createRobotClient itself (SDK 0.61.1) with a direct host', () => {
  test('dials and authenticates, then rejects only for want of a WebRTC peer (so tests use RobotClient.dial)', async () => {
    const conf = (payload: string) => ({
      host: url,
      credentials: { type: 'api-key' as const, authEntity: apiKeyId, payload },
      noReconnect: true,
      dialTimeout: 5000,
      disableSessions: true,
    });
    // Wrong credentials fail at Authenticate on the machine …
    await assert.rejects(createRobotClient(conf('wrong')), (error: Error) => {
      const causes = (error as { cause?: unknown }).cause;
      assert.ok(
        Array.isArray(causes) && causes.some((c) => (c as { code?: unknown }).code === Code.Unauthenticated),
      );
      return true;
    });
    // … the right ones pass it and the connection probe, and the SDK's last check (`isConnected()`, true
    // only for a connected WebRTC peer) turns the working direct connection into this error.
    await assert.rejects(createRobotClient(conf(apiKey)), (error: Error) => {
      assert.equal(error.message, 'Failed to connect to robot');
      assert.equal((error as { cause?: unknown }).cause, undefined);
      return true;
    });
  });
});

describe('authentication', () => {
  const transports = {
    grpc: () => createGrpcTransport({ baseUrl: url }),
    connect: () => createConnectTransport({ baseUrl: url, httpVersion: '1.1' }),
  };

  test('a location secret works for the machine host names through the SDK', async () => {
    // Without an auth entity the SDK uses the host it dials (`localhost:<port>`), one of the machine's names.
    const client = await createSdkRobotClient({
      host: url,
      transport: 'grpc-web',
      credentials: { type: 'robot-location-secret', authEntity: '', payload: locationSecret },
    });
    try {
      assert.equal((await new SensorClient(client, 'thermo').getReadings()).celsius, 21.5);
    } finally {
      await client.disconnect();
    }
    const auth = createClient(authPb.AuthService, transports.grpc());
    const { accessToken } = await auth.authenticate({
      entity: 'my-machine-main.loc1.local.example.cloud',
      credentials: { type: 'robot-location-secret', payload: locationSecret },
    });
    assert.ok(accessToken.length > 20);
    await assert.rejects(
      auth.authenticate({
        entity: 'some-other-machine.example.cloud',
        credentials: { type: 'robot-location-secret', payload: locationSecret },
      }),
      (error: ConnectError) => error.code === Code.Unauthenticated,
    );
  });

  for (const [kind, transport] of Object.entries(transports)) {
    test(`${kind}: calls without a token, with a bad token or with wrong credentials answer Unauthenticated`, async () => {
      const sensor = createClient(sensorPb.SensorService, transport());
      await assert.rejects(sensor.getReadings({ name: 'thermo' }), (error: ConnectError) => {
        assert.equal(error.code, Code.Unauthenticated);
        return true;
      });
      await assert.rejects(
        sensor.getReadings({ name: 'thermo' }, { headers: { authorization: 'Bearer not.a.token' } }),
        (error: ConnectError) => error.code === Code.Unauthenticated,
      );
      const auth = createClient(authPb.AuthService, transport());
      for (const credentials of [
        { entity: apiKeyId, type: 'api-key', payload: 'wrong' },
        { entity: 'unknown-key', type: 'api-key', payload: apiKey },
        { entity: 'localhost', type: 'robot-location-secret', payload: 'wrong-secret' },
      ]) {
        await assert.rejects(
          auth.authenticate({ entity: credentials.entity, credentials }),
          (error: ConnectError) => error.code === Code.Unauthenticated,
          JSON.stringify(credentials),
        );
      }
      await assert.rejects(
        auth.authenticate({ entity: apiKeyId, credentials: { type: 'robot-secret', payload: 'x' } }),
        (error: ConnectError) => error.code === Code.InvalidArgument,
      );
    });
  }

  test('a token stops working once its API key is removed from the config', async () => {
    const auth = createClient(authPb.AuthService, transports.grpc());
    const { accessToken } = await auth.authenticate({
      entity: apiKeyId,
      credentials: { type: 'api-key', payload: apiKey },
    });
    const robot = createClient(machineRobotPb.RobotService, transports.grpc());
    const headers = { authorization: `Bearer ${accessToken}` };
    assert.equal((await robot.resourceNames({}, { headers })).resources.length, 4);
    const before = host.currentConfig();
    host.setConfig({ ...before, auth: { ...before.auth, handlers: [] } });
    try {
      await assert.rejects(
        robot.resourceNames({}, { headers }),
        (error: ConnectError) => error.code === Code.Unauthenticated,
      );
    } finally {
      host.setConfig(before);
    }
    assert.equal((await robot.resourceNames({}, { headers })).resources.length, 4);
  });
});

describe('RobotService housekeeping', () => {
  async function robotClient() {
    const transport = createGrpcTransport({ baseUrl: url });
    const { accessToken } = await createClient(authPb.AuthService, transport).authenticate({
      entity: apiKeyId,
      credentials: { type: 'api-key', payload: apiKey },
    });
    return {
      robot: createClient(machineRobotPb.RobotService, transport),
      headers: { authorization: `Bearer ${accessToken}` },
    };
  }

  test('Shutdown asks the machine to shut down', async () => {
    const { robot, headers } = await robotClient();
    await robot.shutdown({}, { headers });
    assert.deepEqual(host.shutdownRequests, ['shutdown_request']);
  });

  test('an expired session stops the motor it set in motion', async () => {
    const { robot, headers } = await robotClient();
    const before = host.currentConfig();
    host.setConfig({ ...before, network: { ...before.network, heartbeatWindowMs: 400 } });
    try {
      const session = await robot.startSession({}, { headers });
      assert.equal(Number(session.heartbeatWindow?.nanos), 400_000_000);
      const motorClient = createClient(motorPb.MotorService, createGrpcTransport({ baseUrl: url }));
      const stopsBefore = motor.state.stops;
      await motorClient.setPower(
        { name: 'wheel', powerPct: 0.3 },
        { headers: { ...headers, 'viam-sid': session.id } },
      );
      assert.equal(motor.state.powerPct, 0.3);
      await robot.sendSessionHeartbeat({ id: session.id }, { headers });
      await new Promise((resolve) => setTimeout(resolve, 1200));
      assert.equal(motor.state.powerPct, 0);
      assert.equal(motor.state.stops, stopsBefore + 1);
      await assert.rejects(
        robot.sendSessionHeartbeat({ id: session.id }, { headers }),
        (error: ConnectError) => error.code === Code.InvalidArgument && /SESSION_EXPIRED/.test(error.message),
      );
    } finally {
      host.setConfig(before);
    }
  });

  test('GetOperations lists a call in flight; CancelOperation aborts it; BlockForOperation waits for it', async () => {
    const { robot, headers } = await robotClient();
    const generic = createClient(genericPb.GenericService, createGrpcTransport({ baseUrl: url }));
    const call = generic.doCommand({ name: 'gen', command: { wait: true } }, { headers });
    const outcome = call.then(
      () => 'finished',
      (error: ConnectError) => error.code,
    );
    let operation: { id: string; method: string } | undefined;
    while (!operation) {
      const { operations } = await robot.getOperations({}, { headers });
      operation = operations.find(
        (entry) => entry.method === '/viam.component.generic.v1.GenericService/DoCommand',
      );
    }
    const blocked = robot.blockForOperation({ id: operation.id }, { headers });
    await robot.cancelOperation({ id: operation.id }, { headers });
    assert.equal(await outcome, Code.Aborted);
    await blocked;
    const { operations } = await robot.getOperations({}, { headers });
    assert.equal(
      operations.some((entry) => entry.id === operation?.id),
      false,
    );
    await assert.rejects(
      robot.cancelOperation({ id: operation.id }, { headers }),
      (error: ConnectError) => error.code === Code.NotFound,
    );
  });
});

describe('plain HTTP routes', () => {
  test('/ answers for health checks; /restart_status answers the agent', async () => {
    assert.equal((await fetch(`${url}/`)).status, 200);
    const allowed = await (await fetch(`${url}/restart_status`)).json();
    assert.deepEqual(allowed, {
      restart_allowed: true,
      does_not_handle_needs_restart: true,
      module_server_tcp_addr: '',
    });
    host.setRestartAllowed(false);
    try {
      const blocked = await (await fetch(`${url}/restart_status`)).json();
      assert.equal(blocked.restart_allowed, false);
    } finally {
      host.setRestartAllowed(true);
    }
    assert.equal((await fetch(`${url}/nothing-here`)).status, 404);
  });
});
