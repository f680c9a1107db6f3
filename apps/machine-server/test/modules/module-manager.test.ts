/**
 * The module manager with real module processes (the counter-sensor example and two fixtures):
 * start and Ready, a modular sensor that reads another resource through the parent, ValidateConfig
 * implicit dependencies, module logs in the parent's logger at the module's log level, a crash
 * (SIGKILL) restarted after ~5 s with its resources handed back for rebuild, SIGTERM then SIGKILL for
 * a module that ignores SIGTERM, a module that exits at once, and the untrusted environment.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import type { MachineConfig, ModuleConfig } from '../../src/config/machine-config.ts';
import { createSilentLogger, type Logger } from '../../src/logging/logger.ts';
import type { ModuleDiff } from '../../src/machine-host.ts';
import {
  createModuleManager,
  type ModuleManager,
  type ModuleManagerOptions,
} from '../../src/modules/module-manager.ts';
import type { Sensor } from '../../src/resources/apis/sensor.ts';
import { createDependencies } from '../../src/resources/dependencies.ts';
import { createModelRegistry, type ModelRegistry } from '../../src/resources/model-registry.ts';
import type { Resource } from '../../src/resources/resource.ts';
import { parseResourceConfig, type ResourceConfig } from '../../src/resources/resource-config.ts';
import { formatResourceName, parseModel, type ResourceName } from '../../src/resources/resource-name.ts';
import {
  counterExecutable,
  createCapturingLogger,
  createLoggingCapture,
  createMapLookup,
  fixedSensor,
  fixtures,
  linkExecutable,
  moduleConfig,
  sensorName,
  tempDir,
  waitFor,
} from './module-test-support.ts';

const counterModel = parseModel('mcloud:example:counter');
const sensorApiTriple = { namespace: 'rdk', type: 'component', subtype: 'sensor' };

function diffOf(
  added: ModuleConfig[],
  extra: Partial<ModuleDiff> = {},
  config: Partial<MachineConfig> = {},
): ModuleDiff {
  return {
    added,
    modified: [],
    removed: [],
    config: { modules: added, debug: false, log: [], ...config } as unknown as MachineConfig,
    ...extra,
  };
}

function counterConfig(name: string, attributes: Record<string, unknown> = {}, index = 0): ResourceConfig {
  return parseResourceConfig(
    { name, api: 'rdk:component:sensor', model: 'mcloud:example:counter', attributes: attributes as never },
    'components',
    `components[${index}]`,
  );
}

async function build(
  registry: ModelRegistry,
  config: ResourceConfig,
  dependencies: Resource[],
): Promise<Resource> {
  const registration = registry.lookup(config.api, config.model);
  assert.ok(registration, `model ${config.model.name} registered`);
  return registration.build({
    config,
    dependencies: createDependencies(dependencies),
    logger: createSilentLogger(),
    signal: AbortSignal.timeout(10_000),
  });
}

function testManager(
  dir: string,
  fields: { registry: ModelRegistry; lookup: ReturnType<typeof createMapLookup>; logger: Logger },
  overrides: Partial<ModuleManagerOptions> = {},
): ModuleManager {
  return createModuleManager({
    registry: fields.registry,
    resources: fields.lookup,
    logger: fields.logger,
    clock: systemClock,
    viamHome: join(dir, 'viam-home'),
    env: { PATH: process.env.PATH },
    untrustedEnv: false,
    debug: false,
    partId: () => undefined,
    cloudMetadata: () => undefined,
    requestRebuild: () => {},
    ...overrides,
  });
}

describe('module manager with the counter-sensor example', () => {
  const { logger, lines } = createLoggingCapture();
  const lookup = createMapLookup();
  const registry = createModelRegistry();
  const rebuilds: ResourceName[][] = [];
  let manager: ModuleManager;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const base = fixedSensor(sensorName('base'), { celsius: 21.5 });

  before(async () => {
    dir = await tempDir('modules-test-');
    lookup.resources.set(formatResourceName(base.name), base);
    manager = testManager(
      dir.path,
      { registry, lookup, logger },
      {
        requestRebuild: (names) => rebuilds.push([...names]),
      },
    );
    await manager.start(AbortSignal.timeout(5000));
  });

  after(async () => {
    await manager?.close(AbortSignal.timeout(20_000));
    await dir?.remove();
  });

  test('starts, becomes ready and registers its model; ValidateConfig gives implicit dependencies', async () => {
    const counter = moduleConfig('counter', counterExecutable, { logLevel: 'debug' });
    const diff = diffOf([counter]);
    await manager.prepare(diff, AbortSignal.timeout(5000));
    const started = Date.now();
    await manager.apply(diff, AbortSignal.timeout(30_000));
    const [status] = manager.statuses();
    assert.equal(status?.state, 'ready', status?.error);
    assert.deepEqual(status?.models, ['rdk:component:sensor mcloud:example:counter']);
    assert.ok(Date.now() - started < 10_000);

    const registration = registry.lookup(sensorApiTriple, counterModel);
    assert.equal(registration?.source, 'counter');
    const deps = await registration?.validate?.(
      counterConfig('c1', { source: 'base' }),
      AbortSignal.timeout(5000),
    );
    assert.deepEqual(deps, { requiredDeps: ['base'], optionalDeps: [] });
    await assert.rejects(
      Promise.resolve(
        registration?.validate?.(counterConfig('bad', { step: 'x' }, 3), AbortSignal.timeout(5000)),
      ),
      (error: Error & { code?: string }) =>
        error.code === 'InvalidArgument' &&
        error.message.startsWith('components[3]: module counter rejected the config') &&
        /attributes\.step/.test(error.message),
    );
  });

  test('a modular sensor reads another resource through the parent', async () => {
    const sensor = (await build(registry, counterConfig('c1', { step: 3, source: 'base' }), [
      base,
    ])) as Sensor;
    lookup.resources.set(formatResourceName(sensor.name), sensor);
    assert.deepEqual(await sensor.getReadings({ signal: AbortSignal.timeout(5000) }), {
      count: 3,
      step: 3,
      source: { celsius: 21.5 },
    });
    assert.equal((await sensor.getReadings({ signal: AbortSignal.timeout(5000) })).count, 6);
  });

  test("module logs arrive in the parent's logger at the module's log level", async () => {
    const sensor = lookup.resources.get('rdk:component:sensor/c1') as Sensor;
    await sensor.doCommand(
      { log: { level: 'warn', message: 'from the module' } },
      { signal: AbortSignal.timeout(5000) },
    );
    const line = await waitFor('the module log', () => lines.find((l) => l.message === 'from the module'));
    assert.equal(line.level, 'warn');
    assert.equal(line.logger, 'counter.rdk:component:sensor/c1');
    // log_level debug: the module's debug entries are output although the parent logs at info.
    const reading = lines.find((l) => l.level === 'debug' && l.message === 'reading');
    assert.deepEqual(reading?.fields, { count: 3 });
    assert.equal(reading?.logger, 'counter.rdk:component:sensor/c1');
  });

  test('a crashed module is restarted after ~5 s and its resources are handed back for rebuild', async () => {
    const before = manager.statuses()[0];
    assert.ok(before?.pid);
    const killedAt = Date.now();
    process.kill(before.pid, 'SIGKILL');
    await waitFor('unhealthy', () => manager.statuses()[0]?.state === 'unhealthy', 5000);
    assert.match(manager.statuses()[0]?.error ?? '', /exited unexpectedly \(killed by SIGKILL\)/);
    assert.equal(registry.lookup(sensorApiTriple, counterModel), undefined, 'models unregistered while down');
    const sensor = lookup.resources.get('rdk:component:sensor/c1') as Sensor;
    await assert.rejects(
      sensor.getReadings({ signal: AbortSignal.timeout(5000) }),
      (e: Error & { code?: string }) => e.code === 'Unavailable',
    );

    await waitFor('restarted', () => manager.statuses()[0]?.state === 'ready', 20_000);
    const restartMs = Date.now() - killedAt;
    assert.ok(restartMs >= 4900 && restartMs < 12_000, `restarted after ${restartMs} ms`);
    assert.notEqual(manager.statuses()[0]?.pid, before.pid);
    assert.ok(
      lines.some(
        (l) => l.logger === 'rdk.modmanager.counter' && l.message === 'Module has unexpectedly exited.',
      ),
    );
    assert.deepEqual(rebuilds.at(-1)?.map(formatResourceName), ['rdk:component:sensor/c1']);

    // The graph rebuilds: close the old proxy, AddResource again on the new process.
    await sensor.close(AbortSignal.timeout(5000));
    const rebuilt = (await build(registry, counterConfig('c1', { step: 3, source: 'base' }), [
      base,
    ])) as Sensor;
    lookup.resources.set(formatResourceName(rebuilt.name), rebuilt);
    assert.deepEqual(await rebuilt.getReadings({ signal: AbortSignal.timeout(5000) }), {
      count: 3,
      step: 3,
      source: { celsius: 21.5 },
    });
  });

  test('without log_level the module sends no debug entries', async () => {
    const quietExe = await linkExecutable(dir.path, counterExecutable, 'counter-quiet');
    const quiet = moduleConfig('quiet', quietExe);
    const counter = manager.statuses().find((s) => s.name === 'counter');
    assert.ok(counter);
    // `quiet` serves the same model: it cannot register it while `counter` holds it.
    await manager.apply(
      diffOf([], { removed: [moduleConfig('counter', counterExecutable)] }),
      AbortSignal.timeout(30_000),
    );
    lookup.resources.delete('rdk:component:sensor/c1');
    const diff = diffOf([quiet]);
    await manager.prepare(diff, AbortSignal.timeout(5000));
    await manager.apply(diff, AbortSignal.timeout(30_000));
    assert.equal(manager.statuses().find((s) => s.name === 'quiet')?.state, 'ready');
    const sensor = (await build(registry, counterConfig('q1'), [])) as Sensor;
    const mark = lines.length;
    await sensor.getReadings({ signal: AbortSignal.timeout(5000) });
    await sensor.doCommand(
      { log: { level: 'info', message: 'quiet info' } },
      { signal: AbortSignal.timeout(5000) },
    );
    await waitFor('the info entry', () => lines.some((l) => l.message === 'quiet info'));
    assert.equal(
      lines.slice(mark).filter((l) => l.level === 'debug' && l.logger.startsWith('quiet.')).length,
      0,
    );
  });
});

describe('module manager: stop order and failing modules', () => {
  const logger = createCapturingLogger();
  const lookup = createMapLookup();
  const registry = createModelRegistry();
  let manager: ModuleManager;
  let dir: Awaited<ReturnType<typeof tempDir>>;

  before(async () => {
    dir = await tempDir('modules-stop-test-');
    manager = testManager(
      dir.path,
      { registry, lookup, logger },
      {
        env: { PATH: process.env.PATH, STUBBORN_SIGNAL_LOG: join(dir.path, 'signals.log') },
        partId: () => 'part-1',
        timings: { stopTimeoutMs: 1500 },
      },
    );
    await manager.start(AbortSignal.timeout(5000));
  });

  after(async () => {
    await manager?.close(AbortSignal.timeout(20_000));
    await dir?.remove();
  });

  test('a module that exits at once is unhealthy with the reason; the others run', async () => {
    const good = moduleConfig('good', counterExecutable);
    const bad = moduleConfig('bad', join(fixtures, 'exits-at-once'));
    const diff = diffOf([good, bad]);
    await manager.prepare(diff, AbortSignal.timeout(5000));
    await manager.apply(diff, AbortSignal.timeout(30_000));
    const statuses = Object.fromEntries(manager.statuses().map((s) => [s.name, s]));
    assert.equal(statuses.good?.state, 'ready');
    assert.equal(statuses.bad?.state, 'unhealthy');
    assert.match(
      statuses.bad?.error ?? '',
      /module bad exited too quickly after attempted startup \(exit code 3\)/,
    );
    assert.ok(
      logger.lines.some(
        (l) =>
          l.logger === 'rdk.modmanager.bad.StdErr' && l.message === '\n\\_ cannot start: missing hardware',
      ),
    );
    assert.ok(registry.lookup(sensorApiTriple, counterModel), 'the good module still serves its model');
    await manager.apply(diffOf([], { removed: [good, bad] }), AbortSignal.timeout(30_000));
    assert.deepEqual(manager.statuses(), []);
  });

  test('stop sends SIGTERM, then SIGKILL to a module that ignores SIGTERM', async () => {
    const stubborn = moduleConfig('stubborn', join(fixtures, 'stubborn-module'));
    const diff = diffOf([stubborn]);
    await manager.prepare(diff, AbortSignal.timeout(5000));
    await manager.apply(diff, AbortSignal.timeout(30_000));
    assert.equal(manager.statuses()[0]?.state, 'ready', manager.statuses()[0]?.error);
    const stopStarted = Date.now();
    await manager.apply(diffOf([], { removed: [stubborn] }), AbortSignal.timeout(30_000));
    const stopMs = Date.now() - stopStarted;
    const signals = (await readFile(join(dir.path, 'signals.log'), 'utf8')).trim().split('\n');
    // SIGTERM to the process, SIGTERM to its group after a third of the deadline, then SIGKILL.
    assert.equal(signals.length, 2, signals.join('; '));
    assert.ok(signals.every((line) => line.startsWith('SIGTERM ')));
    assert.ok(stopMs >= 1400 && stopMs < 5000, `stopped after ${stopMs} ms`);
    assert.ok(
      !logger.lines.some(
        (l) => l.message === 'Module has unexpectedly exited.' && l.logger.includes('stubborn'),
      ),
    );
  });

  test('two modules with the same name: neither runs, with the reason', async () => {
    const one = moduleConfig('twin', counterExecutable, { path: 'modules[0]' });
    const two = moduleConfig('twin', join(fixtures, 'stubborn-module'), { path: 'modules[1]' });
    await manager.apply(diffOf([one, two]), AbortSignal.timeout(10_000));
    const [status, ...rest] = manager.statuses();
    assert.deepEqual(rest, []);
    assert.equal(status?.state, 'unhealthy');
    assert.match(
      status?.error ?? '',
      /modules\[\d\]\.name: duplicate module name "twin"; neither module runs/,
    );
    await manager.apply(diffOf([], { removed: [one] }), AbortSignal.timeout(10_000));
    assert.deepEqual(manager.statuses(), []);
  });

  test('-untrusted-env runs only modules with a viam: module_id', async () => {
    const untrusted = testManager(
      dir.path,
      { registry: createModelRegistry(), lookup, logger },
      { untrustedEnv: true },
    );
    await untrusted.start(AbortSignal.timeout(5000));
    try {
      const local = moduleConfig('local-one', counterExecutable);
      await untrusted.apply(diffOf([local]), AbortSignal.timeout(10_000));
      const [status] = untrusted.statuses();
      assert.equal(status?.state, 'unhealthy');
      assert.match(status?.error ?? '', /modular resources disabled in untrusted environment/);
    } finally {
      await untrusted.close(AbortSignal.timeout(10_000));
    }
  });
});

describe('module manager: first run and TCP mode', () => {
  const logger = createCapturingLogger();
  const lookup = createMapLookup();
  const registry = createModelRegistry();
  let manager: ModuleManager;
  let dir: Awaited<ReturnType<typeof tempDir>>;

  before(async () => {
    dir = await tempDir('modules-first-run-');
    manager = testManager(dir.path, { registry, lookup, logger });
    await manager.start(AbortSignal.timeout(5000));
  });

  after(async () => {
    await manager?.close(AbortSignal.timeout(20_000));
    await dir?.remove();
  });

  test('meta.json first_run runs once (marker file), in the module root with the module environment', async () => {
    const root = join(dir.path, 'first-run-module');
    await mkdir(root);
    const exe = await linkExecutable(root, counterExecutable, 'counter');
    await writeFile(
      join(root, 'meta.json'),
      JSON.stringify({ entrypoint: 'counter', first_run: 'setup.sh' }),
    );
    await writeFile(
      join(root, 'setup.sh'),
      '#!/bin/sh\necho "setup for $VIAM_MODULE_NAME in $(pwd)" >> runs.log\necho installing\n',
      { mode: 0o755 },
    );
    const config = moduleConfig('first', exe);
    await manager.prepare(diffOf([config]), AbortSignal.timeout(10_000));
    await manager.prepare(diffOf([config]), AbortSignal.timeout(10_000));
    assert.equal(await readFile(join(root, 'runs.log'), 'utf8'), `setup for first in ${root}\n`);
    assert.equal(existsSync(`${root}.first_run_succeeded`), true);
    assert.ok(logger.lines.some((l) => l.logger === 'rdk.modmanager.first' && l.message === 'installing'));
  });

  test('a failing first_run aborts the pass with the reason', async () => {
    const root = join(dir.path, 'failing-module');
    await mkdir(root);
    const exe = await linkExecutable(root, counterExecutable, 'counter');
    await writeFile(join(root, 'meta.json'), JSON.stringify({ first_run: 'setup.sh' }));
    await writeFile(join(root, 'setup.sh'), '#!/bin/sh\necho "no compiler" >&2\nexit 7\n', { mode: 0o755 });
    await assert.rejects(
      manager.prepare(diffOf([moduleConfig('failing', exe)]), AbortSignal.timeout(10_000)),
      /reconfiguration aborted because module failing first run failed: .*exit code 7/,
    );
    assert.equal(existsSync(`${root}.first_run_succeeded`), false);
    await assert.rejects(
      manager.prepare(diffOf([moduleConfig('missing', join(dir.path, 'nope'))]), AbortSignal.timeout(10_000)),
      /modules\[missing\]\.executable_path: does not exist/,
    );
  });

  test('tcp_mode: the module listens on 127.0.0.1 and calls the parent over TCP', async () => {
    const config = moduleConfig('tcp', counterExecutable, { tcpMode: true });
    await manager.apply(diffOf([config]), AbortSignal.timeout(30_000));
    const tcp = manager.statuses().find((s) => s.name === 'tcp');
    assert.equal(tcp?.state, 'ready', tcp?.error);
    const base = fixedSensor(sensorName('base'), { lux: 7 });
    lookup.resources.set(formatResourceName(base.name), base);
    const sensor = (await build(registry, counterConfig('t1', { source: 'base' }), [base])) as Sensor;
    assert.deepEqual(await sensor.getReadings({ signal: AbortSignal.timeout(5000) }), {
      count: 1,
      step: 1,
      source: { lux: 7 },
    });
  });
});

/** A started manager in a fresh temp dir for one test; closed and removed afterwards. */
async function withManager(
  prefix: string,
  run: (context: { manager: ModuleManager; registry: ModelRegistry; dir: string }) => Promise<void>,
  logger: Logger = createSilentLogger(),
): Promise<void> {
  const dir = await tempDir(prefix);
  const registry = createModelRegistry();
  const manager = testManager(dir.path, { registry, lookup: createMapLookup(), logger });
  await manager.start(AbortSignal.timeout(5000));
  try {
    await run({ manager, registry, dir: dir.path });
  } finally {
    await manager.close(AbortSignal.timeout(20_000));
    await dir.remove();
  }
}

test('switching debug on restarts modules without log_level with --log-level=debug', () =>
  withManager('modules-debug-', async ({ manager, registry }) => {
    const counter = moduleConfig('counter', counterExecutable);
    await manager.apply(diffOf([counter]), AbortSignal.timeout(30_000));
    const first = (await build(registry, counterConfig('d1'), [])) as Sensor;
    const before = await first.doCommand({ info: true }, { signal: AbortSignal.timeout(5000) });
    assert.deepEqual((before.argv as string[]).slice(1), []);

    const { rebuild } = await manager.apply(
      diffOf([], {}, { modules: [counter], debug: true }),
      AbortSignal.timeout(30_000),
    );
    assert.deepEqual(rebuild.map(formatResourceName), ['rdk:component:sensor/d1']);
    await first.close(AbortSignal.timeout(5000));
    const again = (await build(registry, counterConfig('d1'), [])) as Sensor;
    const after = await again.doCommand({ info: true }, { signal: AbortSignal.timeout(5000) });
    assert.notEqual(after.pid, before.pid);
    assert.deepEqual((after.argv as string[]).slice(1), ['--log-level=debug']);

    // Nothing changed: no restart.
    const unchanged = await manager.apply(
      diffOf([], {}, { modules: [counter], debug: true }),
      AbortSignal.timeout(30_000),
    );
    assert.deepEqual(unchanged.rebuild, []);
  }));

test("a module's stderr lines are logged at ERROR and never de-duplicated", () => {
  const capture = createLoggingCapture('rdk');
  return withManager(
    'modules-stderr-',
    async ({ manager }) => {
      await manager.apply(
        diffOf([moduleConfig('noisy', join(fixtures, 'noisy-then-exit'))]),
        AbortSignal.timeout(30_000),
      );
      const stderr = await waitFor('five stderr lines', () => {
        const found = capture.lines.filter((l) => l.logger === 'rdk.modmanager.noisy.StdErr');
        return found.length >= 5 && found;
      });
      assert.deepEqual(
        stderr.map((l) => [l.level, l.message]),
        Array.from({ length: 5 }, () => ['error', '\n\\_ boom']),
      );
    },
    capture.logger.child('modmanager'),
  );
});

test('a local tarball module is unpacked, started from its meta.json entrypoint and first-run once', () =>
  withManager('modules-tarball-', async ({ manager, registry, dir }) => {
    const viamHome = join(dir, 'viam-home');
    const source = join(dir, 'source');
    await mkdir(join(source, 'bin'), { recursive: true });
    await writeFile(
      join(source, 'meta.json'),
      JSON.stringify({ entrypoint: 'bin/run', first_run: 'setup.sh' }),
    );
    await writeFile(join(source, 'bin', 'run'), `#!/bin/sh\nexec "${counterExecutable}" "$@"\n`, {
      mode: 0o755,
    });
    await writeFile(join(source, 'setup.sh'), '#!/bin/sh\necho ran >> "$VIAM_MODULE_DATA/setup.log"\n', {
      mode: 0o755,
    });
    const tarball = join(dir, 'counter.tar.gz');
    execFileSync('tar', ['-czf', tarball, '-C', source, '.']);
    const config = moduleConfig('packed', tarball);
    await manager.prepare(diffOf([config]), AbortSignal.timeout(20_000));
    await manager.prepare(diffOf([config]), AbortSignal.timeout(20_000));
    await manager.apply(diffOf([config]), AbortSignal.timeout(30_000));
    const status = manager.statuses()[0];
    assert.equal(status?.state, 'ready', status?.error);
    const root = join(viamHome, 'packages', 'local', 'module', 'packed');
    const sensor = (await build(registry, counterConfig('p1'), [])) as Sensor;
    const info = await sensor.doCommand({ info: true }, { signal: AbortSignal.timeout(5000) });
    assert.equal(info.module_root, root);
    assert.equal(info.cwd, root);
    assert.equal(
      await readFile(join(viamHome, 'module-data', 'local', 'packed', 'setup.log'), 'utf8'),
      'ran\n',
    );

    await writeFile(join(dir, 'bad.tgz'), 'not a tarball');
    await assert.rejects(
      manager.prepare(diffOf([moduleConfig('bad', join(dir, 'bad.tgz'))]), AbortSignal.timeout(20_000)),
      /modules\[bad\]\.executable_path: cannot unpack the tarball/,
    );
  }));
