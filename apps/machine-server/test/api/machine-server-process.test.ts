import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Code, type ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { machineRobotPb } from '@mcloud/protocol';
import { createSdkRobotClient, expectRpcError, structFromJson } from '@mcloud/sdk-testkit';
import { CameraClient, GenericComponentClient, type RobotClient, SensorClient } from '@viamrobotics/sdk';
import { type MachineProcess, startMachineProcess } from '../support/machine-process.ts';

const exitsAtOnce = path.join(import.meta.dirname, '..', 'modules', 'fixtures', 'exits-at-once');
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
        // Bad input (issue 4): a dependency cycle, a duplicate name, a module that exits at once.
        { name: 'loop-a', api: 'rdk:component:generic', model: 'fake', depends_on: ['loop-b'] },
        { name: 'loop-b', api: 'rdk:component:generic', model: 'fake', depends_on: ['loop-a'] },
        { name: 'twin', api: 'rdk:component:generic', model: 'fake' },
        { name: 'twin', api: 'rdk:component:generic', model: 'fake' },
        { name: 'orphan', api: 'rdk:component:sensor', model: 'acme:broken:thing' },
      ],
      modules: [{ name: 'broken', executable_path: exitsAtOnce }],
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

test('bad input marks only the affected resources unhealthy, with the reason in GetMachineStatus and the logs', async () => {
  const client = await createSdkRobotClient({
    host: url,
    transport: 'grpc',
    credentials: { type: 'api-key', authEntity: keyId, payload: key },
    disableSessions: true,
  });
  try {
    await whenRunning(client);
    const status = (await client.getMachineStatus()).resources as {
      name?: { name: string; subtype: string };
      state: number;
      error: string;
    }[];
    const errorOf = (name: string) => {
      const found = status.filter((resource) => resource.name?.name === name);
      assert.ok(found.length > 0 && found.every((r) => r.state === 5), `${name}: ${JSON.stringify(found)}`);
      return found.map((r) => r.error).join(' | ');
    };
    assert.match(errorOf('ghost'), /unknown model acme:demo:nothing/);
    assert.match(errorOf('loop-a'), /dependency cycle/);
    assert.match(errorOf('loop-b'), /dependency cycle/);
    assert.match(errorOf('twin'), /duplicate resource name rdk:component:generic\/twin/);
    assert.match(errorOf('orphan'), /module broken exited too quickly after attempted startup/);
    // Everything else is ready.
    const ready = status.filter((r) => r.state === 3).map((r) => r.name?.name);
    assert.deepEqual(ready.sort(), ['cam', 'gen', 'thermo']);
    assert.deepEqual(await new SensorClient(client, 'thermo').getReadings(), { temp: 22.5 });
  } finally {
    await client.disconnect();
  }
  const logged = (pattern: RegExp) =>
    assert.ok(
      machine.lines.some((line) => pattern.test(line)),
      `no log line matches ${pattern}\n${machine.lines.join('\n')}`,
    );
  logged(/\tWARN\t.*resource (build error|cannot be built).*sensor\/ghost.*unknown model acme:demo:nothing/);
  logged(/\tWARN\t.*resource cannot be built.*generic\/loop-a.*dependency cycle/);
  logged(/\tERROR\t.*Cannot add duplicate local resource.*generic\/twin/);
  logged(/\tERROR\t.*broken.*exited too quickly after attempted startup/);
});

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
  // Idle keep-alive connections of the SDK do not hold the graceful stop until its 5 s deadline
  // (a whole stop takes well under a second idle; the margin is for a loaded test machine).
  assert.ok(Date.now() - shutdownStarted < 4500, `shutdown took ${Date.now() - shutdownStarted} ms`);
});
