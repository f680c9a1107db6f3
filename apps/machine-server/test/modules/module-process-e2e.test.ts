/**
 * End to end: a real machine-server process (the bin) with a local config holding two modules, read
 * with the real @viamrobotics/sdk over the machine API. The modular sensor answers through the machine
 * API (and reads a built-in sensor through the parent server), the module got the A3.2 environment,
 * the broken module's resource is UNHEALTHY with a reason in GetMachineStatus, and SIGTERM to the
 * machine-server stops the module process too.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createSdkRobotClient, structFromJson } from '@mcloud/sdk-testkit';
import { type RobotClient, SensorClient } from '@viamrobotics/sdk';
import { counterExecutable, fixtures, tempDir, waitFor } from './module-test-support.ts';

const bin = fileURLToPath(new URL('../../src/bin/machine-server.js', import.meta.url));

let dir: Awaited<ReturnType<typeof tempDir>>;
let child: ChildProcess;
let url: string;
let exited: Promise<number | null>;

before(async () => {
  dir = await tempDir('module-process-e2e-');
  const configPath = path.join(dir.path, 'config.json');
  await writeFile(
    configPath,
    JSON.stringify({
      network: { bind_address: 'localhost:0' },
      modules: [
        {
          name: 'counter',
          executable_path: counterExecutable,
          log_level: 'debug',
          env: { COUNTER_EXTRA: 'yes' },
        },
        { name: 'broken', executable_path: path.join(fixtures, 'exits-at-once') },
      ],
      components: [
        {
          name: 'thermo',
          api: 'rdk:component:sensor',
          model: 'fake',
          attributes: { readings: { temp: 22.5 } },
        },
        {
          name: 'c1',
          api: 'rdk:component:sensor',
          model: 'mcloud:example:counter',
          attributes: { step: 2, source: 'thermo' },
        },
        { name: 'lonely', api: 'rdk:component:sensor', model: 'mcloud:broken:thing' },
      ],
    }),
  );
  child = spawn(process.execPath, [bin, '-config', configPath, '-disable-mdns'], {
    env: { ...process.env, HOME: dir.path, VIAM_HOME: path.join(dir.path, '.viam') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no "serving" line within 20 s')), 20_000);
    lines.on('line', (line) => {
      const columns = line.split('\t');
      if (!columns.includes('serving')) return;
      clearTimeout(timer);
      resolve((JSON.parse(columns.at(-1) as string) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`machine-server exited with ${code} before serving`)));
  });
});

after(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await dir.remove();
});

interface ResourceStatusView {
  name?: { name: string };
  state: number;
  error: string;
}

async function statuses(client: RobotClient): Promise<ResourceStatusView[]> {
  return (await client.getMachineStatus()).resources as ResourceStatusView[];
}

test('a modular sensor through the machine API, its environment, a broken module, and shutdown', async () => {
  const client = await createSdkRobotClient({ host: url, transport: 'grpc' });
  let modulePid: number;
  try {
    let ready: ResourceStatusView[] = [];
    await waitFor(
      'c1 ready',
      async () => {
        ready = await statuses(client);
        return ready.some((r) => r.name?.name === 'c1' && r.state === 3);
      },
      60_000,
    ).catch(() => assert.fail(`c1 not ready: ${JSON.stringify(ready)}`));
    const c1 = new SensorClient(client, 'c1');
    assert.deepEqual(await c1.getReadings(), { count: 2, step: 2, source: { temp: 22.5 } });
    assert.equal(((await c1.getReadings()) as { count: number }).count, 4);

    const info = (await c1.doCommand(structFromJson({ info: true }))) as Record<string, unknown>;
    modulePid = info.pid as number;
    assert.equal(info.module_name, 'counter');
    assert.equal(info.module_data, path.join(dir.path, '.viam', 'module-data', 'local', 'counter'));
    assert.equal(info.module_root, path.dirname(counterExecutable));
    assert.equal(info.cwd, path.dirname(counterExecutable));
    assert.match(String((info.argv as string[])[0]), /\/viam-module-[^/]+\/counter-[a-z]{5}\.sock$/);
    assert.deepEqual((info.argv as string[]).slice(1), ['--log-level=debug']);

    const lonely = (await statuses(client)).find((r) => r.name?.name === 'lonely');
    assert.equal(lonely?.state, 5);
    assert.match(lonely?.error ?? '', /unknown model mcloud:broken:thing/);
    assert.match(lonely?.error ?? '', /modules not running: broken \(module broken exited too quickly/);
    assert.ok((await statuses(client)).some((r) => r.name?.name === 'thermo' && r.state === 3));

    // RestartModule by name: a new process, c1 rebuilt on it (the count starts again).
    await client.restartModule(undefined, 'counter');
    await waitFor(
      'c1 rebuilt on a new process',
      async () => {
        try {
          const now = (await c1.doCommand(structFromJson({ info: true }))) as Record<string, unknown>;
          return now.pid !== modulePid && now;
        } catch {
          return false;
        }
      },
      20_000,
    );
    assert.deepEqual(await c1.getReadings(), { count: 2, step: 2, source: { temp: 22.5 } });
    modulePid = ((await c1.doCommand(structFromJson({ info: true }))) as { pid: number }).pid;
    await assert.rejects(client.restartModule(undefined, 'nope'), /not_found|NotFound|no such module/i);
  } finally {
    await client.disconnect();
  }

  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.throws(() => process.kill(modulePid, 0), /ESRCH/, 'the module process is gone');
  // NODE_COMPILE_CACHE from the parent (module-launch.ts): the TypeScript module kept its compile cache.
  const moduleCache = path.join(dir.path, '.viam', 'compile-cache', 'modules', 'counter');
  const cached = await readdir(moduleCache, { recursive: true }).catch(() => []);
  assert.ok(
    cached.filter((entry) => entry.includes(path.sep)).length > 20,
    `${moduleCache}: ${cached.length}`,
  );
});
