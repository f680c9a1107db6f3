/**
 * Command-line options of real machine-server processes (machine-runtime.md A6, A1.7, A3.6) with a
 * local configuration: -cpuprofile, -output-telemetry, -ftdc / -ftdc=false, -network-check and the
 * background checks at start-up, -reveal-sensitive-config-diffs, -webrtc's start-up notice and
 * -untrusted-env.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { waitFor } from '../data/data-fixtures.ts';
import {
  type MachineProcess,
  type StartMachineOptions,
  startMachineProcess,
} from '../support/machine-process.ts';
import { decodeFtdc } from './ftdc-decode.ts';

const running: MachineProcess[] = [];
after(async () => {
  for (const machine of running) {
    await machine.stop(5000);
    await machine.cleanup();
  }
});

async function start(options: StartMachineOptions): Promise<MachineProcess> {
  const machine = await startMachineProcess(options);
  running.push(machine);
  return machine;
}

function exitOf(machine: MachineProcess): Promise<number | null> {
  if (machine.child.exitCode !== null) return Promise.resolve(machine.child.exitCode);
  return new Promise((resolve) => machine.child.once('exit', (code) => resolve(code)));
}

const network = { bind_address: '127.0.0.1:0' };
const sensor = { name: 'thermo', api: 'rdk:component:sensor', model: 'fake' };

test('-cpuprofile writes a V8 CPU profile at a clean shutdown; -output-telemetry prints JSON metric lines', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'ms-cpuprofile-'));
  try {
    const profileFile = path.join(dir, 'run.cpuprofile');
    const captured = {
      ...sensor,
      service_configs: [
        {
          type: 'data_manager',
          attributes: { capture_methods: [{ method: 'Readings', capture_frequency_hz: 50 }] },
        },
      ],
    };
    const dataManager = {
      name: 'dm',
      api: 'rdk:service:data_manager',
      model: 'builtin',
      attributes: { sync_disabled: true },
    };
    const machine = await start({
      config: { network, components: [captured], services: [dataManager] },
      args: ['-cpuprofile', profileFile, '-output-telemetry', '-disable-mdns'],
      env: { MCLOUD_TELEMETRY_INTERVAL_MS: '100' },
    });
    await machine.waitForLine(/machine-server ready/);
    const mark = machine.lines.length;
    await machine.waitForLine(
      /^\{"telemetry":.*"data_manager\.rdk:service:data_manager\/dm\.captured_readings":[1-9]/,
      10_000,
      mark,
    );
    const telemetry = machine.lines
      .filter((line) => line.startsWith('{"telemetry":'))
      .map((line) => JSON.parse(line) as { telemetry: Record<string, number>; at: string });
    const last = telemetry.at(-1);
    assert.ok((last?.telemetry['process.rss_bytes'] ?? 0) > 10_000_000);
    assert.equal(last?.telemetry['resources.ready'], 2);
    assert.equal(last?.telemetry['data_manager.rdk:service:data_manager/dm.collectors'], 1);
    if (existsSync('/proc/net/dev')) assert.ok((last?.telemetry['net.rx_bytes'] ?? -1) >= 0);
    assert.ok(Number.isFinite(last?.telemetry['process.cpu_user_percent']));
    assert.ok(!Number.isNaN(Date.parse(last?.at ?? '')));
    assert.match(
      machine.lines.find((line) => line.includes('-webrtc:')) ?? '',
      /WebRTC is not implemented yet; clients connect directly/,
      '-webrtc (default true) says at start-up that connections are direct',
    );

    assert.equal(await machine.stop(), 0);
    const profile = JSON.parse(await readFile(profileFile, 'utf8')) as {
      nodes: { id: number; callFrame: { functionName: string; url: string } }[];
      samples: number[];
      timeDeltas: number[];
      startTime: number;
      endTime: number;
    };
    assert.ok(profile.nodes.length > 10, `${profile.nodes.length} nodes`);
    assert.ok(profile.samples.length > 0 && profile.samples.length === profile.timeDeltas.length);
    const ids = new Set(profile.nodes.map((node) => node.id));
    assert.ok(
      profile.samples.every((id) => ids.has(id)),
      'every sample names a node',
    );
    assert.ok(profile.endTime > profile.startTime);
    assert.ok(
      profile.nodes.some((node) => node.callFrame.url.includes('machine-server')),
      'the profile covers machine-server code',
    );
    // The harness passes -ftdc=false: nothing is written.
    assert.deepEqual(
      await readdir(machine.viamHome).then((names) => names.includes('diagnostics.data')),
      false,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('-ftdc on a local config: files under diagnostics.data/local-config, rolled over, newest kept', async () => {
  const machine = await start({
    config: { network, components: [sensor] },
    args: ['-ftdc', '-webrtc=false', '-disable-mdns'],
    env: { MCLOUD_FTDC_INTERVAL_MS: '50', MCLOUD_FTDC_MAX_FILE_BYTES: '600', MCLOUD_FTDC_MAX_FILES: '2' },
  });
  await machine.waitForLine(/machine-server ready/);
  const directory = path.join(machine.viamHome, 'diagnostics.data', 'local-config');
  const seen = new Set<string>();
  let most = 0;
  await waitFor(
    async () => {
      const names = (await readdir(directory).catch(() => [] as string[])).filter((n) => n.endsWith('.ftdc'));
      for (const name of names) seen.add(name);
      most = Math.max(most, names.length);
      return seen.size >= 4;
    },
    15_000,
    'four FTDC files',
  );
  assert.ok(most <= 2, `at most 2 files at a time (saw ${most})`);
  for (const name of seen) assert.match(name, /^machine-server-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.ftdc$/);
  assert.equal(await machine.stop(), 0);
  const left = (await readdir(directory)).sort();
  assert.ok(left.length <= 2);
  const samples = decodeFtdc(await readFile(path.join(directory, left[0] as string)));
  assert.ok(samples.length > 3 && samples.every((sample) => sample.metrics['resources.ready'] === 1));
  assert.ok(!machine.lines.some((line) => line.includes('-webrtc:')), '-webrtc=false: no notice');
  assert.ok(
    !machine.lines.some((line) => /\tWARN\t.*\tFTDC write failed/.test(line)),
    'no write failed while old files were removed',
  );
});

test('-network-check runs the checks, logs every result, and exits 0 even when some fail', async () => {
  const cloudLike = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => cloudLike.listen(0, '127.0.0.1', resolve));
  const port = (cloudLike.address() as { port: number }).port;
  try {
    const started = Date.now();
    const machine = await start({
      config: { cloud: { app_address: `http://127.0.0.1:${port}`, id: 'part', secret: 'not-used-here' } },
      args: ['-network-check'],
    });
    assert.equal(await exitOf(machine), 0, machine.lines.join('\n'));
    assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
    const results = machine.lines
      .filter((line) => /\trdk\.network-checks\t.*network check\t/.test(line))
      .map(
        (line) =>
          JSON.parse(line.split('\t').at(-1) as string) as { check: string; ok: boolean; detail: string },
      );
    const checks = results.map((result) => result.check);
    const cloudCheck = results.find((result) => result.check === `tcp 127.0.0.1:${port}`);
    assert.equal(cloudCheck?.ok, true);
    assert.equal(cloudCheck?.detail, 'connected');
    for (const expected of [
      'dns system google.com',
      'dns 1.1.1.1 google.com',
      'dns 8.8.8.8 google.com',
      'udp stun stun.l.google.com:19302',
      'tcp stun turn.viam.com:443',
    ]) {
      assert.ok(checks.includes(expected), `${expected} in ${checks.join(', ')}`);
    }
    assert.ok(
      !machine.lines.some((line) => /initial configuration applied|machine-server starting/.test(line)),
    );
  } finally {
    cloudLike.close();
  }
});

test('without -network-check the checks run in the background after start-up', async () => {
  const machine = await start({ config: { network, components: [sensor] }, args: ['-disable-mdns'] });
  await machine.waitForLine(/machine-server ready/);
  const done = await machine.waitForLine(/\tINFO\trdk\.network-checks\t.*network checks done\t/, 15_000);
  const summary = JSON.parse(done.split('\t').at(-1) as string) as {
    passed: number;
    total: number;
    failed: string[];
  };
  assert.equal(summary.total, 13, 'DNS of 2 names through 3 resolvers, 6 UDP STUN, 1 TCP STUN');
  assert.equal(summary.passed + summary.failed.length, summary.total);
  assert.ok(
    !machine.lines.some((line) => /\tWARN\trdk\.network-checks/.test(line)),
    'failures are summarized, not one warning each (CI has no internet)',
  );
  assert.equal(await machine.stop(), 0);
});

test('-reveal-sensitive-config-diffs logs each diff at debug with secrets masked; without it, no diff', async () => {
  const secrets = ['first-api-key-secret', 'second-api-key-secret', 'remote-secret-one', 'remote-secret-two'];
  const configWith = (temp: number, apiKey: string, remoteSecret: string) => ({
    network,
    auth: { handlers: [{ type: 'api-key', config: { 'flags-key': apiKey, keys: ['flags-key'] } }] },
    remotes: [
      {
        name: 'far',
        address: '192.0.2.10:8080',
        secret: remoteSecret,
        auth: { credentials: { type: 'robot-location-secret', payload: remoteSecret } },
      },
    ],
    components: [{ ...sensor, attributes: { readings: { temp } } }],
  });
  const run = async (args: string[]) => {
    const machine = await start({
      config: configWith(20, 'first-api-key-secret', 'remote-secret-one'),
      args: ['-debug', '-disable-mdns', ...args],
    });
    await machine.waitForLine(/initial configuration applied/);
    const mark = machine.lines.length;
    await writeFile(
      machine.configPath,
      JSON.stringify(configWith(30, 'second-api-key-secret', 'remote-secret-two'), null, 2),
    );
    await machine.waitForLine(/\tconfiguration applied/, 15_000, mark);
    assert.equal(await machine.stop(), 0);
    for (const secret of secrets) {
      assert.ok(!machine.lines.some((line) => line.includes(secret)), `${secret} never printed`);
    }
    return { machine, mark };
  };

  const revealed = await run(['-reveal-sensitive-config-diffs']);
  const lines = revealed.machine.lines;
  const constructing = lines.findIndex((line) => /\tDEBUG\trdk\.config\t.*Constructing with$/.test(line));
  assert.ok(constructing >= 0 && constructing < revealed.mark, 'the first config is logged as Constructing');
  const reconfiguring = lines.findIndex(
    (line, index) => index >= revealed.mark && /\tDEBUG\trdk\.config\t.*Reconfiguring with$/.test(line),
  );
  assert.ok(reconfiguring > 0, 'the change is logged as Reconfiguring');
  const diff = lines.slice(reconfiguring + 1, reconfiguring + 12).filter((line) => /^[-+] /.test(line));
  assert.ok(
    diff.some((line) => /^- .*"temp": 20/.test(line)),
    diff.join('\n'),
  );
  assert.ok(
    diff.some((line) => /^\+ .*"temp": 30/.test(line)),
    diff.join('\n'),
  );
  assert.equal(diff.length, 2, `only the changed lines (masked secrets compare equal):\n${diff.join('\n')}`);
  const initial = lines.slice(constructing + 1, revealed.mark).filter((line) => /^\+ /.test(line));
  for (const key of ['"flags-key"', '"secret"', '"payload"']) {
    assert.ok(
      initial.some((line) => line.includes(key) && line.includes('"******"')),
      `${key} is masked`,
    );
  }
  assert.ok(
    initial.some((line) => line.includes('"address": "192.0.2.10:8080"')),
    'non-secret values are shown',
  );

  const hidden = await run([]);
  assert.ok(
    !hidden.machine.lines.some((line) => /Constructing with|Reconfiguring with|"temp": 30/.test(line)),
  );
});

test('-untrusted-env: no local module process runs and the capture directory may not move', async () => {
  const fixture = path.join(import.meta.dirname, '..', 'modules', 'fixtures', 'exits-at-once');
  const config = {
    network,
    modules: [{ type: 'local', name: 'local-mod', executable_path: fixture }],
    components: [sensor],
  };
  const machine = await start({ config, args: ['-untrusted-env', '-disable-mdns'] });
  await machine.waitForLine(/initial configuration applied/);
  await machine.waitForLine(/modules\[0\]: modular resources disabled in untrusted environment/);
  const mark = machine.lines.length;
  const dataManager = {
    name: 'dm',
    api: 'rdk:service:data_manager',
    model: 'builtin',
    attributes: { capture_dir: path.join(tmpdir(), 'elsewhere') },
  };
  await writeFile(machine.configPath, JSON.stringify({ ...config, services: [dataManager] }));
  const refused = await machine.waitForLine(/reconfiguration aborted/, 15_000, mark);
  assert.match(
    refused,
    /services\[0\]\.attributes\.capture_dir: may not be changed in an untrusted environment/,
  );
  assert.equal(await machine.stop(), 0);
  assert.ok(
    !machine.lines.some((line) => line.includes('cannot start: missing hardware')),
    'the module executable never ran',
  );
});

test('a diagnostics tuning variable out of range is a bad command line (exit 2, naming it)', async () => {
  const machine = await start({
    config: { network, components: [sensor] },
    env: { MCLOUD_FTDC_MAX_FILES: '0' },
  });
  assert.equal(await exitOf(machine), 2);
  assert.ok(
    machine.lines.includes('MCLOUD_FTDC_MAX_FILES: must be a whole number between 1 and 10000 (got "0")'),
    machine.lines.join('\n'),
  );
});

test('-cpuprofile to a path that cannot be written stops start-up with a clear error', async () => {
  const missing = path.join(tmpdir(), `no-such-dir-${process.pid}`, 'run.cpuprofile');
  const machine = await start({ config: { network, components: [sensor] }, args: ['-cpuprofile', missing] });
  assert.equal(await exitOf(machine), 1);
  assert.ok(
    machine.lines.some((line) => line.includes(`-cpuprofile: cannot write \\"${missing}\\" (ENOENT)`)),
    machine.lines.join('\n'),
  );
  assert.ok(!machine.lines.some((line) => line.includes('machine-server starting')));
});

test('-dump-resources to a path that cannot be written exits 1 with a clear error', async () => {
  const missing = path.join(tmpdir(), `no-such-dir-${process.pid}`, 'dump.json');
  const machine = await start({ config: { network }, args: ['-dump-resources', missing] });
  assert.equal(await exitOf(machine), 1);
  assert.ok(
    machine.lines.includes(`-dump-resources: cannot write "${missing}" (ENOENT)`),
    machine.lines.join('\n'),
  );
});
