/**
 * Modules inside a whole machine-server (startMachineServer with the resource graph, a local config
 * file and real module processes): modular resources appear in the graph as proxies, implicit
 * dependencies from ValidateConfig order the build, a module that exits at once leaves only its
 * resources unhealthy with a reason, a crashed module comes back ~5 s later with its resources
 * rebuilt by the graph, and shutdown closes dependents first (a built-in resource on a modular one,
 * the modular one, then its dependency) before stopping the module processes.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { MachineServerOptions } from '../../src/machine-host.ts';
import {
  createDefaultLogging,
  type RunningMachineServer,
  startMachineServer,
} from '../../src/machine-server.ts';
import { createModulesPart, type ModulesPart } from '../../src/modules/modules-part.ts';
import { isSensor, type Sensor, sensorApi } from '../../src/resources/apis/sensor.ts';
import { formatResourceName } from '../../src/resources/resource-name.ts';
import {
  counterExecutable,
  createCapturingLogger,
  fixtures,
  tempDir,
  waitFor,
} from './module-test-support.ts';

let dir: Awaited<ReturnType<typeof tempDir>>;
let server: RunningMachineServer;
let modules: ModulesPart;
let configPath: string;
const logs = createCapturingLogger('rdk');
const machineConfig: { modules: Record<string, unknown>[]; components: unknown[] } = {
  modules: [],
  components: [],
};

function options(configPath: string, viamHome: string): MachineServerOptions {
  return {
    configPath,
    debug: false,
    disableMdns: true,
    noTls: true,
    allowInsecureCreds: false,
    webrtc: false,
    webProfile: false,
    untrustedEnv: false,
    revealSensitiveConfigDiffs: false,
    outputTelemetry: false,
    ftdc: false,
    viamHome,
    env: { PATH: process.env.PATH },
  } as MachineServerOptions;
}

const statusOf = (name: string, type = 'sensor') =>
  server.host.status().resources.find((r) => formatResourceName(r.name) === `rdk:component:${type}/${name}`);

before(async () => {
  dir = await tempDir('modules-machine-');
  configPath = join(dir.path, 'machine.json');
  await writeFile(
    configPath,
    JSON.stringify(
      Object.assign(machineConfig, {
        modules: [
          { name: 'counter', executable_path: counterExecutable },
          { name: 'broken', executable_path: join(fixtures, 'exits-at-once') },
        ],
        components: [
          // c1 names base only in its attributes: the dependency comes from the module's ValidateConfig.
          {
            name: 'c1',
            api: 'rdk:component:sensor',
            model: 'mcloud:example:counter',
            attributes: { step: 5, source: 'base' },
          },
          {
            name: 'base',
            api: 'rdk:component:sensor',
            model: 'fake',
            attributes: { readings: { celsius: 20 } },
          },
          { name: 'lonely', api: 'rdk:component:sensor', model: 'mcloud:broken:thing' },
          // A built-in resource depending on the modular one: shutdown closes it first.
          { name: 'top', api: 'rdk:component:generic', model: 'fake', depends_on: ['c1'] },
        ],
      }),
    ),
  );
  const opts = options(configPath, join(dir.path, 'viam-home'));
  modules = createModulesPart(opts);
  server = await startMachineServer(opts, {
    logging: { ...createDefaultLogging(false), logger: logs },
    extensions: [modules.extension],
    moduleReconciler: modules.reconciler,
  });
  await server.ready;
});

after(async () => {
  await server?.stop('test done');
  await dir?.remove();
});

test('a modular sensor built after its implicit dependency reads it through the parent', async () => {
  await waitFor('c1 ready', () => statusOf('c1')?.state === 'ready', 20_000);
  const c1 = server.host.resources.findByShortName(sensorApi, 'c1');
  assert.ok(isSensor(c1));
  const readings = await (c1 as Sensor).getReadings({ signal: AbortSignal.timeout(5000) });
  assert.deepEqual(readings, { count: 5, step: 5, source: { celsius: 20 } });
  assert.ok(
    server.host.resources.names().some((name) => formatResourceName(name) === 'rdk:component:sensor/c1'),
  );
});

test('a module that exits at once leaves only its resources unhealthy, with a reason', async () => {
  const lonely = statusOf('lonely');
  assert.equal(lonely?.state, 'unhealthy');
  assert.match(lonely?.error ?? '', /unknown model mcloud:broken:thing/);
  assert.match(
    lonely?.error ?? '',
    /modules not running: broken \(module broken exited too quickly after attempted startup/,
  );
  assert.equal(statusOf('base')?.state, 'ready');
  const broken = modules
    .manager()
    ?.statuses()
    .find((s) => s.name === 'broken');
  assert.equal(broken?.state, 'unhealthy');
  assert.match(broken?.error ?? '', /exited too quickly after attempted startup \(exit code 3\)/);
});

test('diagnostics report each module process (FTDC / -output-telemetry)', async () => {
  const first = modules.extension.diagnostics?.() ?? {};
  assert.equal(first['counter.up'], 1);
  assert.equal(first['broken.up'], 0);
  assert.ok((first['broken.consecutive_failures'] ?? 0) >= 1);
  assert.ok((first['counter.rss_bytes'] ?? 0) > 10_000_000, `rss ${first['counter.rss_bytes']}`);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const second = modules.extension.diagnostics?.() ?? {};
  assert.ok(Number.isFinite(second['counter.cpu_percent']) && (second['counter.cpu_percent'] ?? -1) >= 0);
});

test('a crashed module comes back ~5 s later and the graph rebuilds its resources', async () => {
  const counter = modules
    .manager()
    ?.statuses()
    .find((s) => s.name === 'counter');
  assert.ok(counter?.pid);
  const c1 = server.host.resources.findByShortName(sensorApi, 'c1') as Sensor;
  assert.equal((await c1.getReadings({ signal: AbortSignal.timeout(5000) })).count, 10);
  const killedAt = Date.now();
  process.kill(counter.pid, 'SIGKILL');
  await waitFor('c1 unhealthy', () => statusOf('c1')?.state !== 'ready', 5000);
  await waitFor('c1 ready again', () => statusOf('c1')?.state === 'ready', 20_000);
  const backAfterMs = Date.now() - killedAt;
  assert.ok(backAfterMs >= 4900 && backAfterMs < 15_000, `back after ${backAfterMs} ms`);
  const rebuilt = server.host.resources.findByShortName(sensorApi, 'c1') as Sensor;
  // A new process: the count starts again.
  assert.deepEqual(await rebuilt.getReadings({ signal: AbortSignal.timeout(5000) }), {
    count: 5,
    step: 5,
    source: { celsius: 20 },
  });
});

test('a changed module config restarts the module and its resources are rebuilt', async () => {
  const before = modules
    .manager()
    ?.statuses()
    .find((s) => s.name === 'counter');
  assert.ok(before?.pid);
  const c1 = server.host.resources.findByShortName(sensorApi, 'c1') as Sensor;
  await c1.getReadings({ signal: AbortSignal.timeout(5000) });
  const [counter, ...others] = machineConfig.modules;
  await writeFile(
    configPath,
    JSON.stringify({
      ...machineConfig,
      modules: [{ ...counter, env: { COUNTER_GENERATION: '2' } }, ...others],
    }),
  );
  await waitFor(
    'a new counter process',
    () => {
      const now = modules
        .manager()
        ?.statuses()
        .find((s) => s.name === 'counter');
      return now?.state === 'ready' && now.pid !== before.pid;
    },
    20_000,
  );
  // The module restarts first, then the pass rebuilds c1 on it: a fresh count once that happened.
  const readings = await waitFor(
    'c1 rebuilt on the new process',
    async () => {
      if (statusOf('c1')?.state !== 'ready') return false;
      const rebuilt = server.host.resources.findByShortName(sensorApi, 'c1') as Sensor;
      return rebuilt.getReadings({ signal: AbortSignal.timeout(5000) }).catch(() => false as const);
    },
    20_000,
  );
  assert.equal(readings.count, 5);
});

test('shutdown closes dependents first, modular resources included, then stops the module processes', async () => {
  const pid = modules
    .manager()
    ?.statuses()
    .find((s) => s.name === 'counter')?.pid;
  assert.ok(pid);
  await waitFor('top ready', () => statusOf('top', 'generic')?.state === 'ready', 20_000);
  const mark = logs.lines.length;
  await server.stop('test');
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
  const closed = logs.lines.slice(mark).find((line) => line.message === 'resources closed');
  const order = (closed?.fields?.order ?? []) as string[];
  const at = (key: string) => order.indexOf(key);
  assert.ok(at('rdk:component:generic/top') >= 0, JSON.stringify(order));
  assert.ok(at('rdk:component:generic/top') < at('rdk:component:sensor/c1'), JSON.stringify(order));
  assert.ok(at('rdk:component:sensor/c1') < at('rdk:component:sensor/base'), JSON.stringify(order));
  // c1's close reached the module (RemoveResource) before the process was stopped.
  await waitFor(
    'the module logged its close',
    () => logs.lines.slice(mark).some((line) => /counter closed/.test(line.message)),
    5000,
  ).catch(() => assert.fail(logs.lines.map((l) => `${l.logger} ${l.message}`).join('\n')));
});
