/**
 * The data manager against a real cloud (embedded PostgreSQL, real HTTP/2): captured readings and
 * images become queryable through DataService; the cloud going away during capture and connections
 * cut right after an upload lose nothing and duplicate nothing; terminal errors move files to failed/.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startTestCloud, type TestCloud } from '@mcloud/cloud/testing';
import type { CloudConnection } from '../../src/cloud/cloud-connection.ts';
import type { UploadTarget } from '../../src/data/capture-file-upload.ts';
import { parseCaptureMethods } from '../../src/data/capture-method-config.ts';
import { startDataManager } from '../../src/data/data-manager.ts';
import type { DataManager } from '../../src/data/data-manager-api.ts';
import { parseDataManagerConfig } from '../../src/data/data-manager-config.ts';
import type { JsonObject } from '../../src/json.ts';
import type { Resource } from '../../src/resources/resource.ts';
import {
  binaryItems,
  createMachinePart,
  type MachinePart,
  machineUploadTarget,
  tabularReadings,
} from './cloud-fixtures.ts';
import {
  createRecordingLogger,
  fakeCamera,
  fakeSensor,
  listFiles,
  makeTempDir,
  waitFor,
} from './data-fixtures.ts';
import { type CutProxy, startCutProxy } from './tcp-cut-proxy.ts';

let t: TestCloud;
let temp: { dir: string; remove(): Promise<void> };
const cleanups: (() => Promise<void> | void)[] = [];

before(async () => {
  t = await startTestCloud();
  temp = await makeTempDir();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await t?.stop();
  await temp?.remove();
});

const fastBackoff = { initialDelayMs: 50, maxDelayMs: 1000, offlineDelayMs: 300 };

interface Machine {
  part: MachinePart;
  connection: CloudConnection;
  target: UploadTarget;
}

async function machineVia(url: string, part?: MachinePart): Promise<Machine> {
  const owned = part ?? (await createMachinePart(t));
  const { connection, target } = machineUploadTarget(url, owned);
  cleanups.push(() => connection.close());
  return { part: owned, connection, target };
}

function captureOn(methods: JsonObject[]) {
  return parseCaptureMethods(
    [{ type: 'data_manager', attributes: { capture_methods: methods } }],
    'components[0]',
  );
}

async function runDataManager(
  name: string,
  attributes: JsonObject,
  targets: { resource: Resource; methods: JsonObject[] }[],
  cloud: UploadTarget | undefined,
  logger = createRecordingLogger(),
): Promise<DataManager> {
  const config = parseDataManagerConfig(attributes, 'services[0].attributes', {
    viamHome: path.join(temp.dir, name),
  });
  const manager = await startDataManager({
    name: { api: { namespace: 'rdk', type: 'service', subtype: 'data_manager' }, remotePath: [], name },
    config,
    targets: targets.map((entry) => ({ resource: entry.resource, methods: captureOn(entry.methods) })),
    resources: targets.map((entry) => entry.resource),
    cloud: () => cloud,
    logger,
    backoff: fastBackoff,
  });
  cleanups.push(() => manager.close(AbortSignal.timeout(30_000)));
  return manager;
}

const seqOf = (entry: { data: Record<string, unknown> }) =>
  (entry.data as { readings: { seq: number } }).readings.seq;

function assertExactlyOnce(seqs: number[], count: number, what: string) {
  const sorted = [...seqs].sort((a, b) => a - b);
  const expected = Array.from({ length: count }, (_, index) => index + 1);
  assert.equal(sorted.length, count, `${what}: ${sorted.length} stored for ${count} captured`);
  assert.deepEqual(sorted, expected, `${what}: every reading exactly once`);
}

test('captured readings and images reach the cloud and are queryable through DataService', async () => {
  const machine = await machineVia(t.url);
  const sensor = fakeSensor('thermo', (call) => ({ seq: call, temperature: 20 + (call % 7) / 10 }));
  const frame = (call: number) => new Uint8Array(5000).map((_, index) => (index + call) % 256);
  const camera = fakeCamera('cam', 'image/jpeg', frame);
  const captureDir = path.join(temp.dir, 'queryable');
  const manager = await runDataManager(
    'dm1',
    { capture_dir: captureDir, sync_interval_mins: 0.005, tags: ['site-a'] },
    [
      {
        resource: sensor,
        methods: [
          {
            method: 'Readings',
            capture_frequency_hz: 40,
            additional_params: { unit: 'C' },
            tags: ['ignored'],
          },
        ],
      },
      {
        resource: camera,
        methods: [
          { method: 'ReadImage', capture_frequency_hz: 4, additional_params: { mime_type: 'image/jpeg' } },
        ],
      },
    ],
    machine.target,
  );
  await waitFor(() => sensor.calls() >= 40 && camera.calls() >= 4, 15_000, 'captures');
  await manager.close(AbortSignal.timeout(30_000));
  // A second instance without capture uploads whatever the first left on disk (one pass).
  const syncOnly = await runDataManager(
    'dm1b',
    { capture_dir: captureDir, capture_disabled: true, sync_disabled: true },
    [],
    machine.target,
  );
  await syncOnly.sync({ signal: AbortSignal.timeout(30_000) });
  assert.deepEqual(await listFiles(captureDir), [], 'every file uploaded and deleted');

  const readings = await tabularReadings(machine.part.owner, machine.part.partId, 'thermo');
  assertExactlyOnce(readings.map(seqOf), sensor.calls(), 'readings');
  assert.deepEqual(readings[0]?.tags, ['site-a'], 'service tags replace method tags');
  assert.deepEqual(readings[0]?.methodParameters, { unit: 'C' });

  const images = await binaryItems(machine.part.owner, machine.part.partId, 'cam');
  assert.equal(images.length, camera.calls(), 'one binary item per image');
  const expected = new Set(
    Array.from({ length: camera.calls() }, (_, index) => Buffer.from(frame(index + 1)).toString('hex')),
  );
  for (const image of images) {
    assert.ok(expected.delete(Buffer.from(image.binary).toString('hex')), 'each image stored once, intact');
    assert.equal(image.fileExt, '.jpeg');
    assert.equal(image.mimeType, 'image/jpeg');
  }
});

test('OFFLINE: the cloud goes away during capture and connections drop right after uploads; every reading arrives exactly once', async () => {
  const proxy: CutProxy = await startCutProxy(t.url);
  cleanups.push(() => proxy.close());
  const machine = await machineVia(proxy.url);
  await machine.connection.accessToken();
  const sensor = fakeSensor('offline-sensor', (call) => ({ seq: call }));
  const frame = (call: number) => new Uint8Array(1500).fill(call % 256);
  const camera = fakeCamera('offline-cam', 'image/png', frame);
  const captureDir = path.join(temp.dir, 'offline');
  const logger = createRecordingLogger();
  const manager = await runDataManager(
    'dm-offline',
    // Small files so many uploads happen (and many can lose their acknowledgement).
    {
      capture_dir: captureDir,
      sync_interval_mins: 0.004,
      maximum_capture_file_size_bytes: 600,
      maximum_num_sync_threads: 2,
    },
    [
      { resource: sensor, methods: [{ method: 'Readings', capture_frequency_hz: 50 }] },
      { resource: camera, methods: [{ method: 'GetImages', capture_frequency_hz: 5 }] },
    ],
    machine.target,
    logger,
  );
  const uploaded = () => manager.status().uploadedFiles;
  await waitFor(() => uploaded() >= 3, 15_000, 'first uploads while online');

  await proxy.down();
  const capturedWhenDown = sensor.calls();
  await waitFor(() => sensor.calls() >= capturedWhenDown + 60, 15_000, 'capture continuing offline');
  const uploadedWhileDown = uploaded();
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(uploaded(), uploadedWhileDown, 'nothing uploads while the cloud is unreachable');
  assert.ok((await listFiles(captureDir)).length > 0, 'capture files pile up on disk');

  await proxy.up();
  // The next uploads lose their acknowledgement: the cloud stored them, the machine never heard.
  proxy.armCuts(3);
  await waitFor(() => proxy.cuts() >= 3, 20_000, 'three cut connections');
  await waitFor(() => uploaded() >= uploadedWhileDown + 5, 20_000, 'uploads resuming after the cuts');
  await manager.close(AbortSignal.timeout(30_000));

  const drain = await runDataManager(
    'dm-offline-drain',
    { capture_dir: captureDir, capture_disabled: true, sync_disabled: true },
    [],
    machine.target,
  );
  await waitFor(
    async () => {
      await drain.sync({ signal: AbortSignal.timeout(30_000) });
      return (await listFiles(captureDir)).length === 0;
    },
    30_000,
    'the capture directory to drain',
  );

  const readings = await tabularReadings(machine.part.owner, machine.part.partId, 'offline-sensor');
  assertExactlyOnce(readings.map(seqOf), sensor.calls(), 'offline readings');
  const images = await binaryItems(machine.part.owner, machine.part.partId, 'offline-cam');
  assert.equal(images.length, camera.calls(), 'offline images exactly once');
  assert.ok(manager.status().retries >= 3, 'failed uploads were retried');
});

test('terminal errors: a reading the cloud rejects (InvalidArgument) and a damaged file move to failed/ and are not retried', async () => {
  const machine = await machineVia(t.url);
  const captureDir = path.join(temp.dir, 'terminal');
  // PostgreSQL jsonb cannot hold NUL in strings: the cloud answers InvalidArgument.
  const sensor = fakeSensor('nul-sensor', (call) => ({ seq: call, text: 'a\u0000b' }));
  const logger = createRecordingLogger();
  const manager = await runDataManager(
    'dm-terminal',
    { capture_dir: captureDir, sync_disabled: true },
    [{ resource: sensor, methods: [{ method: 'Readings', capture_frequency_hz: 20 }] }],
    machine.target,
    logger,
  );
  await waitFor(() => sensor.calls() >= 3, 10_000, 'captures');
  await manager.close(AbortSignal.timeout(30_000));
  const damagedDir = path.join(captureDir, 'rdk_component_sensor', 'nul-sensor', 'Readings');
  await writeFile(path.join(damagedDir, '0000-damaged.capture'), Buffer.from([200, 1, 2, 3]));

  const syncer = await runDataManager(
    'dm-terminal-sync',
    { capture_dir: captureDir, capture_disabled: true, sync_disabled: true },
    [],
    machine.target,
    logger,
  );
  await syncer.sync({ signal: AbortSignal.timeout(20_000) });
  const files = await listFiles(captureDir);
  assert.ok(files.length >= 2, 'files moved aside');
  assert.ok(
    files.every((file) => file.startsWith('failed/rdk_component_sensor/nul-sensor/Readings/')),
    `every file under failed/ with its relative path: ${files.join(', ')}`,
  );
  assert.ok(files.includes('failed/rdk_component_sensor/nul-sensor/Readings/0000-damaged.capture'));
  assert.equal(syncer.status().failedFiles, files.length);
  assert.ok(logger.entries.some((entry) => entry.level === 'warn' && /moved aside/.test(entry.message)));

  // failed/ is never walked again.
  await syncer.sync({ signal: AbortSignal.timeout(20_000) });
  assert.equal(syncer.status().failedFiles, files.length);
  assert.equal(syncer.status().uploadedFiles, 0);
  assert.deepEqual(await listFiles(captureDir), files);
  assert.deepEqual(await tabularReadings(machine.part.owner, machine.part.partId, 'nul-sensor'), []);
});

test('Sync without a cloud connection answers FailedPrecondition "not connected to the cloud"', async () => {
  const manager = await runDataManager(
    'dm-local',
    { capture_dir: path.join(temp.dir, 'local'), sync_disabled: true },
    [],
    undefined,
  );
  await assert.rejects(
    manager.sync({ signal: AbortSignal.timeout(5000) }),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, 'FailedPrecondition');
      assert.match(error.message, /not connected to the cloud/);
      return true;
    },
  );
});
