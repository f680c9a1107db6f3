import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Code, type ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { machineRobotPb } from '@mcloud/protocol';
import { createSdkRobotClient, expectRpcError, structFromJson } from '@mcloud/sdk-testkit';
import { CameraClient, GenericComponentClient, type RobotClient, SensorClient } from '@viamrobotics/sdk';
import { type MachineProcess, startMachineProcess } from '../support/machine-process.ts';

const keyId = 'process-key';
const key = 'process-key-secret-0123456789';

let machine: MachineProcess;
let url: string;

/** A real machine-server process with a local config; the test reads the "serving" line for its URL. */
before(async () => {
  machine = await startMachineProcess({
    config: {
      network: { bind_address: 'localhost:0' },
      auth: { handlers: [{ type: 'api-key', config: { [keyId]: key, keys: [keyId] } }] },
      components: [
        {
          name: 'thermo',
          api: 'rdk:component:sensor',
          model: 'fake',
          attributes: { readings: { temp: 22.5 } },
        },
        {
          name: 'cam',
          api: 'rdk:component:camera',
          model: 'fake',
          attributes: { width: 16, height: 16, mime_type: 'image/png' },
        },
        { name: 'gen', api: 'rdk:component:generic', model: 'fake' },
        { name: 'ghost', api: 'rdk:component:sensor', model: 'acme:demo:nothing' },
      ],
    },
    args: ['-disable-mdns'],
  });
  const serving = await machine.waitForLine(/\tserving\t/, 20_000);
  url = (JSON.parse(serving.split('\t').at(-1) as string) as { url: string }).url;
});

after(async () => {
  await machine.stop(5_000);
  await machine.cleanup();
});

async function whenRunning(client: RobotClient): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const status = await client.getMachineStatus();
    const names = (status.resources as { name?: { name: string }; state: number }[])
      .filter((resource) => resource.state === 3)
      .map((resource) => resource.name?.name);
    if (status.state === 2 && ['thermo', 'cam', 'gen'].every((name) => names.includes(name))) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail('the machine did not reach RUNNING with its resources ready');
}

test('the machine-server process serves the machine API to the SDK, then shuts down on request', async () => {
  assert.match(url, /^http:\/\/localhost:\d+$/);
  const client = await createSdkRobotClient({
    host: url,
    transport: 'grpc',
    credentials: { type: 'api-key', authEntity: keyId, payload: key },
  });
  try {
    await whenRunning(client);
    assert.deepEqual(await new SensorClient(client, 'thermo').getReadings(), { temp: 22.5 });
    const { images } = await new CameraClient(client, 'cam').getImages();
    assert.equal(images[0]?.mimeType, 'image/png');
    assert.deepEqual([...(images[0]?.image.subarray(1, 4) ?? [])], [...Buffer.from('PNG')]);
    const answer = await new GenericComponentClient(client, 'gen').doCommand(structFromJson({ a: 1 }));
    assert.deepEqual((answer as { echo?: unknown }).echo, { a: 1 });
    const status = await client.getMachineStatus();
    const ghost = (status.resources as { name?: { name: string }; state: number; error: string }[]).find(
      (resource) => resource.name?.name === 'ghost',
    );
    assert.equal(ghost?.state, 5);
    assert.match(ghost?.error ?? '', /acme:demo:nothing/);
    await expectRpcError(new SensorClient(client, 'ghost').getReadings(), Code.Unavailable);
  } finally {
    await client.disconnect();
  }
  const anonymous = createClient(machineRobotPb.RobotService, createGrpcTransport({ baseUrl: url }));
  await assert.rejects(anonymous.shutdown({}), (error: ConnectError) => error.code === Code.Unauthenticated);
  const restart = (await (await fetch(`${url}/restart_status`)).json()) as {
    restart_allowed: boolean;
    does_not_handle_needs_restart: boolean;
    module_server_tcp_addr: string;
  };
  assert.equal(restart.restart_allowed, true);
  assert.equal(restart.does_not_handle_needs_restart, true);
  assert.match(restart.module_server_tcp_addr, /^127\.0\.0\.1:\d+$/);

  const robot = await createSdkRobotClient({
    host: url,
    transport: 'grpc-web',
    credentials: { type: 'api-key', authEntity: keyId, payload: key },
    disableSessions: true,
  });
  const shutdownStarted = Date.now();
  const exited = new Promise((resolve) => machine.child.once('exit', resolve));
  await robot.robotService.shutdown({});
  assert.equal(await exited, 0);
  // Idle keep-alive connections of the SDK do not hold the graceful stop until its deadline.
  assert.ok(Date.now() - shutdownStarted < 3000, `shutdown took ${Date.now() - shutdownStarted} ms`);
});
