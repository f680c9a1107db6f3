/**
 * Collector behaviour without a cloud: frequency and schedule, what the capture call receives, what is
 * skipped (disabled, zero frequency, unknown method, filter-module drops), how failures are logged, and
 * the gates of scheduled sync (no cloud, selective-sync sensor).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { decodeCaptureFile } from '../../src/data/capture-file-format.ts';
import type { UploadTarget } from '../../src/data/capture-file-upload.ts';
import { parseCaptureMethods } from '../../src/data/capture-method-config.ts';
import { startDataManager } from '../../src/data/data-manager.ts';
import { parseDataManagerConfig } from '../../src/data/data-manager-config.ts';
import { MachineError } from '../../src/errors.ts';
import type { JsonObject, JsonValue } from '../../src/json.ts';
import { type Readings, sensorApi } from '../../src/resources/apis/sensor.ts';
import type { Resource } from '../../src/resources/resource.ts';
import { createResourceName } from '../../src/resources/resource-name.ts';
import { createRecordingLogger, fakeSensor, listFiles, makeTempDir, waitFor } from './data-fixtures.ts';

let temp: { dir: string; remove(): Promise<void> };
before(async () => {
  temp = await makeTempDir();
});
after(async () => {
  await temp.remove();
});

async function start(
  name: string,
  attributes: JsonObject,
  targets: { resource: Resource; methods: JsonObject[] }[],
  options: { cloud?: () => UploadTarget | undefined; logger?: ReturnType<typeof createRecordingLogger> } = {},
) {
  const logger = options.logger ?? createRecordingLogger();
  const manager = await startDataManager({
    name: createResourceName({ namespace: 'rdk', type: 'service', subtype: 'data_manager' }, name),
    config: parseDataManagerConfig({ capture_dir: path.join(temp.dir, name), ...attributes }, 's', {
      viamHome: temp.dir,
    }),
    targets: targets.map((entry) => ({
      resource: entry.resource,
      methods: parseCaptureMethods(
        [{ type: 'data_manager', attributes: { capture_methods: entry.methods } }],
        `components[${name}]`,
      ),
    })),
    resources: targets.map((entry) => entry.resource),
    cloud: options.cloud ?? (() => undefined),
    logger,
    clock: systemClock,
  });
  return { manager, logger, dir: path.join(temp.dir, name) };
}

async function readingsIn(dir: string) {
  const all: { timeRequestedMs: number; value: JsonObject }[] = [];
  for (const file of await listFiles(dir)) {
    if (!file.endsWith('.capture')) continue;
    const decoded = decodeCaptureFile(await readFile(path.join(dir, file)), file);
    for (const reading of decoded.readings) {
      all.push({ timeRequestedMs: reading.timeRequestedMs, value: reading.data.value as JsonObject });
    }
  }
  return all;
}

test('a collector captures at its frequency, passes additional_params plus fromDataManagement, keeps order', async () => {
  const extras: JsonObject[] = [];
  const sensor = {
    ...fakeSensor('paced', (call) => ({ seq: call })),
    async getReadings(options: { extra?: JsonObject }) {
      extras.push(options.extra ?? {});
      return { seq: extras.length };
    },
  };
  const { manager, dir } = await start('paced', {}, [
    {
      resource: sensor,
      methods: [{ method: 'Readings', capture_frequency_hz: 20, additional_params: { unit: 'C' } }],
    },
  ]);
  await new Promise((resolve) => setTimeout(resolve, 1050));
  await manager.close(AbortSignal.timeout(10_000));
  assert.ok(
    extras.length >= 15 && extras.length <= 23,
    `about 20 captures in a second, got ${extras.length}`,
  );
  assert.deepEqual(extras[0], { unit: 'C', fromDataManagement: true });
  const readings = await readingsIn(dir);
  assert.deepEqual(
    readings.map((entry) => (entry.value.readings as { seq: number }).seq),
    Array.from({ length: extras.length }, (_, index) => index + 1),
  );
  const gaps = readings
    .slice(1)
    .map((entry, index) => entry.timeRequestedMs - (readings[index]?.timeRequestedMs ?? 0));
  const meanGap = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length;
  assert.ok(meanGap > 40 && meanGap < 60, `drift-free 50 ms schedule, mean gap ${meanGap}`);
});

test('disabled methods, zero frequency and unknown methods capture nothing, with a warning or an error naming the field', async () => {
  const sensor = fakeSensor('quiet', (call) => ({ seq: call }));
  const { manager, logger, dir } = await start('quiet', {}, [
    {
      resource: sensor,
      methods: [
        { method: 'Readings', capture_frequency_hz: 50, disabled: true },
        { method: 'DoCommand', capture_frequency_hz: 0 },
        { method: 'ReadImage', capture_frequency_hz: 5 },
      ],
    },
  ]);
  await new Promise((resolve) => setTimeout(resolve, 300));
  await manager.close(AbortSignal.timeout(10_000));
  assert.equal(sensor.calls(), 0);
  assert.deepEqual(await listFiles(dir), []);
  assert.equal(manager.status().collectors, 0);
  assert.ok(
    logger.entries.some(
      (entry) =>
        entry.level === 'warn' &&
        /capture frequency is zero/.test(entry.message) &&
        /capture_methods\[1\]\.capture_frequency_hz$/.test(String(entry.fields?.field)),
    ),
  );
  assert.ok(
    logger.entries.some(
      (entry) =>
        entry.level === 'error' &&
        /capture_methods\[2\]\.method: rdk:component:sensor has no capture method "ReadImage" \(available: Readings, DoCommand\)/.test(
          entry.message,
        ),
    ),
  );
});

test('capture_disabled stops every collector', async () => {
  const sensor = fakeSensor('off', (call) => ({ seq: call }));
  const { manager } = await start('off', { capture_disabled: true }, [
    { resource: sensor, methods: [{ method: 'Readings', capture_frequency_hz: 100 }] },
  ]);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await manager.close(AbortSignal.timeout(10_000));
  assert.equal(sensor.calls(), 0);
});

test('failures are logged at most once per identical message per 2 s; filter-module drops are silent', async () => {
  let calls = 0;
  const flaky: Resource & { getReadings(): Promise<JsonObject> } = {
    name: createResourceName(sensorApi, 'flaky'),
    async getReadings() {
      calls++;
      if (calls % 3 === 0) throw new MachineError('FailedPrecondition', 'no capture from filter module');
      if (calls % 3 === 1) throw new Error('sensor unplugged');
      return { seq: calls };
    },
    async doCommand() {
      return {};
    },
    async close() {},
  };
  const { manager, logger, dir } = await start('flaky', {}, [
    { resource: flaky, methods: [{ method: 'Readings', capture_frequency_hz: 100 }] },
  ]);
  await waitFor(() => calls >= 60, 10_000, 'calls');
  await manager.close(AbortSignal.timeout(10_000));
  const failures = logger.entries.filter(
    (entry) => entry.level === 'error' && entry.message === 'capture failed',
  );
  assert.equal(failures.length, 1, 'one log line for the repeated failure');
  assert.equal(failures[0]?.fields?.error, 'sensor unplugged');
  assert.ok(!logger.entries.some((entry) => /filter module/.test(JSON.stringify(entry))));
  const stored = await readingsIn(dir);
  assert.ok(stored.length > 0);
  assert.ok(stored.every((entry) => (entry.value.readings as { seq: number }).seq % 3 === 2));
  const expected = Math.floor((calls + 2) / 3);
  const counted = manager.status().captureFailures;
  assert.ok(Math.abs(counted - expected) <= 1, `only real failures are counted: ${counted} vs ${expected}`);
});

test('scheduled sync: skipped without a cloud; gated by the selective-sync sensor', async () => {
  const gate = { open: false, fail: false };
  const gateSensor = fakeSensor('gate', () => {
    if (gate.fail) throw new Error('gate broken');
    return { should_sync: gate.open };
  });
  const uploads: string[] = [];
  // A fake DataSyncService client: records what would be uploaded and succeeds.
  const target: UploadTarget = {
    partId: '00000000-0000-4000-8000-000000000000',
    client: {
      dataCaptureUpload: async (request: { metadata?: { componentName: string } }) => {
        uploads.push(request.metadata?.componentName ?? '');
        return {};
      },
    } as unknown as UploadTarget['client'],
  };
  let cloud: UploadTarget | undefined;
  const sensor = fakeSensor('gated', (call) => ({ seq: call }));
  const { manager, logger } = await start(
    'gated',
    { sync_interval_mins: 0.002, selective_syncer_name: 'gate' },
    [
      { resource: sensor, methods: [{ method: 'Readings', capture_frequency_hz: 50 }] },
      { resource: gateSensor, methods: [] },
    ],
    { cloud: () => cloud },
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(uploads.length, 0);
  assert.ok(logger.entries.some((entry) => /not connected to the cloud/.test(entry.message)));
  cloud = target;
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(uploads.length, 0, 'should_sync false holds scheduled sync');
  gate.fail = true;
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(uploads.length, 0, 'a failing gate sensor holds sync');
  assert.ok(logger.entries.some((entry) => /selective sync sensor failed/.test(entry.message)));
  gate.fail = false;
  gate.open = true;
  await waitFor(() => uploads.length > 0, 5000, 'uploads once the gate opens');
  assert.ok(uploads.every((name) => name === 'gated'));
  await manager.close(AbortSignal.timeout(10_000));
});

test('capture_control_sensor overrides frequency, tags and disabled at run time, and can add a method', async () => {
  let overrides: JsonValue = null;
  const control = fakeSensor('control', (): Readings => (overrides === null ? {} : { overrides }));
  const sensor = fakeSensor('controlled', (call) => ({ seq: call }));
  const other = fakeSensor('other', (call) => ({ seq: call }));
  const { manager, dir } = await start(
    'controlled',
    { capture_control_sensor: { name: 'control', key: 'overrides' } },
    [
      { resource: sensor, methods: [{ method: 'Readings', capture_frequency_hz: 0, tags: ['base'] }] },
      { resource: control, methods: [] },
      { resource: other, methods: [] },
    ],
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(sensor.calls(), 0, 'zero frequency in the config');
    overrides = [
      {
        resource_name: 'rdk:component:sensor/controlled',
        method: 'Readings',
        capture_frequency_hz: 50,
        tags: ['event'],
      },
      { resource_name: 'other', method: 'Readings', capture_frequency_hz: 20 },
    ];
    await waitFor(() => sensor.calls() >= 10 && other.calls() >= 3, 5000, 'captures after the override');
    assert.equal(manager.status().collectors, 2);
    overrides = [{ resource_name: 'controlled', method: 'Readings', disabled: true }];
    await waitFor(() => manager.status().collectors === 0, 5000, 'collectors stopped by the override');
    const stopped = sensor.calls();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(sensor.calls(), stopped);
    overrides = [{ resource_name: 'controlled', method: 'Readings', capture_frequency_hz: 'fast' }];
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(manager.status().collectors, 0, 'a bad override keeps the current capture');
  } finally {
    await manager.close(AbortSignal.timeout(10_000));
  }
  const files = await listFiles(dir);
  const controlledFile = files.find((file) => file.startsWith('rdk_component_sensor/controlled/Readings/'));
  assert.ok(controlledFile);
  const decoded = decodeCaptureFile(await readFile(path.join(dir, controlledFile)), controlledFile);
  assert.deepEqual(decoded.metadata.tags, ['event']);
  assert.ok(files.some((file) => file.startsWith('rdk_component_sensor/other/Readings/')));
});
