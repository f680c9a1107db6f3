import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { streamingDataCaptureUpload } from '@mcloud/sdk-testkit';
import type { ViamClient } from '@viamrobotics/sdk';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { newMachine, ownerOf, type TestMachine } from '../machines/machine-fixtures.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { deliveriesOf, hook, ownerSdk, queuedDeliveryIds, setTriggers, settle } from './events-fixtures.ts';

let nowMs = Date.parse('2026-08-01T12:00:00Z');
const clock: Clock = { nowMs: () => nowMs };
let t: TestCloud;
let owner: AuthedClients;
let sdk: ViamClient;
let machine: TestMachine;

const sensor = 'rdk:component:sensor';
const at = (offsetMs: number) => new Date(nowMs - 60_000 + offsetMs);

before(async () => {
  t = await startTestCloud({ clock });
  owner = await ownerOf(t);
  sdk = await ownerSdk(t.url, t.bootstrap);
  machine = await newMachine(owner, t.bootstrap.location_id, 'data-bot');
});
after(async () => {
  await t?.stop();
});

async function uploadTabular(
  readings: Record<string, unknown>[],
  options: { name?: string; type?: string; method?: string; base?: number } = {},
): Promise<string> {
  const base = options.base ?? 0;
  return sdk.dataClient.tabularDataCaptureUpload(
    readings.map((r) => ({ readings: r })) as never,
    machine.partId,
    options.type ?? sensor,
    options.name ?? 'temp',
    options.method ?? 'Readings',
    readings.map((_, i) => [at(base + i * 1000), at(base + i * 1000 + 5)] as [Date, Date]),
  );
}

test('a part without triggers records nothing for its uploads', async () => {
  await uploadTabular([{ cpu: 99 }]);
  assert.deepEqual(await deliveriesOf(t, machine.partId), []);
});

test('tabular uploads: part_data_ingested and conditional_data_ingested recorded with their jobs', async () => {
  await setTriggers(owner, machine.partId, [
    {
      name: 'tab',
      event: { type: 'part_data_ingested', data_ingested: { data_types: ['tabular'] } },
      notifications: [hook('tab')],
    },
    {
      name: 'files',
      event: { type: 'part_data_ingested', data_ingested: { data_types: ['binary', 'file'] } },
      notifications: [hook('files'), { type: 'email', value: 'ops@example.com' }],
    },
    {
      name: 'hot',
      event: {
        type: 'conditional_data_ingested',
        conditional: {
          data_capture_method: 'sensor:temp:Readings',
          conditions: {
            evals: [
              { operator: 'gt', value: { cpu: 50 } },
              { operator: 'lt', value: { coordinate: { latitude: 40 } } },
            ],
          },
        },
      },
      notifications: [hook('hot', { signing_secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}` })],
    },
    {
      name: 'cam-sync',
      event: {
        type: 'conditional_data_ingested',
        conditional: { data_capture_method: 'camera:cam:ReadImage' },
      },
      notifications: [hook('cam-sync')],
    },
    {
      name: 'cam-evals',
      event: {
        type: 'conditional_data_ingested',
        conditional: {
          data_capture_method: 'camera:cam:ReadImage',
          conditions: { evals: [{ operator: 'gt', value: { x: 1 } }] },
        },
      },
      notifications: [hook('cam-evals')],
    },
    {
      name: 'every-sync',
      event: {
        type: 'conditional_data_ingested',
        conditional: { data_capture_method: 'sensor:temp:Readings' },
      },
      notifications: [hook('every')],
    },
  ]);
  await settle();
  const fileId = await uploadTabular([
    { cpu: 10, coordinate: { latitude: 30 } },
    { cpu: 60, coordinate: { latitude: 50 } },
    { cpu: 70, coordinate: { latitude: 39.5 } },
    { cpu: 80, coordinate: { latitude: 10 } },
  ]);
  assert.ok(fileId);
  const rows = await deliveriesOf(t, machine.partId);
  assert.deepEqual(
    rows.map((r) => [r.trigger_name, r.event_type, r.destination]),
    [
      ['every-sync', 'conditional_data_ingested', 'http://127.0.0.1:9/every'],
      ['hot', 'conditional_data_ingested', 'http://127.0.0.1:9/hot'],
      ['tab', 'part_data_ingested', 'http://127.0.0.1:9/tab'],
    ],
  );
  const byName = Object.fromEntries(rows.map((r) => [r.trigger_name, r]));
  const hot = byName.hot;
  assert.ok(hot);
  assert.equal(hot.organization_id, t.bootstrap.organization_id);
  assert.equal(hot.location_id, t.bootstrap.location_id);
  assert.equal(hot.robot_id, machine.robotId);
  assert.match(hot.signing_secret ?? '', /^whsec_/);
  assert.equal(hot.occurred_at.getTime(), nowMs);
  assert.deepEqual(hot.facts, {
    kind: 'data',
    data: {
      componentName: 'temp',
      componentType: sensor,
      methodName: 'Readings',
      dataType: 'tabular',
      minTimeReceived: at(5).toISOString().replace('Z', '000Z'),
      maxTimeReceived: at(3005).toISOString().replace('Z', '000Z'),
      data: {
        metadata: {
          requested_at: at(2000).toISOString().replace('Z', '000Z'),
          received_at: at(2005).toISOString().replace('Z', '000Z'),
        },
        data: { readings: { cpu: 70, coordinate: { latitude: 39.5 } } },
      },
      triggerCondition: {
        evals: [
          { operator: 'gt', value: { cpu: 50 } },
          { operator: 'lt', value: { coordinate: { latitude: 40 } } },
        ],
      },
    },
  });
  const every = byName['every-sync']?.facts as unknown as { data: { data: { data: unknown } } };
  assert.deepEqual(every.data.data.data, { readings: { cpu: 10, coordinate: { latitude: 30 } } });
  const tab = byName.tab?.facts as unknown as { data: Record<string, unknown> };
  assert.equal(tab.data.dataType, 'tabular');
  assert.equal(tab.data.fileId, undefined);
  assert.equal(tab.data.triggerCondition, undefined);
  assert.deepEqual((tab.data.data as { data: unknown }).data, {
    readings: { cpu: 80, coordinate: { latitude: 10 } },
  });
  const queued = await queuedDeliveryIds(t);
  for (const row of rows) assert.ok(queued.has(row.id), `job queued for ${row.trigger_name}`);

  // The identical upload again (a retry): a duplicate stores nothing and records nothing.
  await uploadTabular([
    { cpu: 10, coordinate: { latitude: 30 } },
    { cpu: 60, coordinate: { latitude: 50 } },
    { cpu: 70, coordinate: { latitude: 39.5 } },
    { cpu: 80, coordinate: { latitude: 10 } },
  ]);
  assert.equal((await deliveriesOf(t, machine.partId)).length, 3);

  // No reading meets the evals: only the unconditional triggers; another component: only `tab`.
  await uploadTabular([{ cpu: 99, coordinate: { latitude: 45 } }], { base: 10_000 });
  await uploadTabular([{ cpu: 99, coordinate: { latitude: 1 } }], { name: 'other', base: 20_000 });
  // The component type compares loosely: a bare `sensor` matches the trigger too; the method must match.
  await uploadTabular([{ cpu: 99, coordinate: { latitude: 1 } }], { type: 'sensor', base: 30_000 });
  await uploadTabular([{ cpu: 99, coordinate: { latitude: 1 } }], { method: 'Other', base: 40_000 });
  const names = (await deliveriesOf(t, machine.partId)).slice(3).map((r) => r.trigger_name);
  assert.deepEqual(names, ['every-sync', 'tab', 'tab', 'every-sync', 'hot', 'tab', 'tab']);
});

test('binary and file uploads: part_data_ingested with file_id and data type, one row per destination', async () => {
  const before = (await deliveriesOf(t, machine.partId)).length;
  const binaryId = await sdk.dataClient.binaryDataCaptureUpload(
    new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]),
    machine.partId,
    'rdk:component:camera',
    'cam',
    'ReadImage',
    '.jpg',
    [at(0), at(10)],
  );
  const fileId = await sdk.dataClient.fileUpload(new TextEncoder().encode('hello'), machine.partId, {
    fileName: 'notes.txt',
    fileExtension: '.txt',
  });
  const rows = (await deliveriesOf(t, machine.partId)).slice(before);
  assert.deepEqual(
    rows.map((r) => [r.trigger_name, r.notification_type, (r.facts.data as { dataType: string }).dataType]),
    [
      // A conditional trigger without evals fires on every sync from its component, binary too.
      ['cam-sync', 'webhook', 'binary'],
      ['files', 'webhook', 'binary'],
      ['files', 'email', 'binary'],
      ['files', 'webhook', 'file'],
      ['files', 'email', 'file'],
    ],
  );
  assert.deepEqual((rows[0]?.facts.data as Record<string, unknown>).triggerCondition, { evals: [] });
  const binaryFacts = rows[1]?.facts.data as Record<string, unknown>;
  assert.equal(binaryFacts.fileId, String(binaryId).split('/').at(-1));
  assert.equal(binaryFacts.componentName, 'cam');
  assert.equal(binaryFacts.minTimeReceived, at(10).toISOString().replace('Z', '000Z'));
  assert.equal(binaryFacts.data, undefined);
  assert.equal((rows[3]?.facts.data as { fileId: string }).fileId, String(fileId).split('/').at(-1));

  // StreamingDataCaptureUpload (how viam-server syncs large captures): the same binary path.
  const streamed = await streamingDataCaptureUpload(sdk, new Uint8Array(200_000).fill(7), {
    partId: machine.partId,
    componentType: 'rdk:component:camera',
    componentName: 'cam-big',
    methodName: 'ReadImage',
    fileExtension: '.bin',
    requestTimes: [at(20), at(21)],
  });
  const after = (await deliveriesOf(t, machine.partId)).slice(before + 5);
  assert.deepEqual(
    after.map((r) => [r.notification_type, (r.facts.data as { componentName: string }).componentName]),
    [
      ['webhook', 'cam-big'],
      ['email', 'cam-big'],
    ],
  );
  assert.equal((after[0]?.facts.data as { fileId: string }).fileId, streamed.binaryDataId.split('/').at(-1));
});

test('concurrent tabular uploads (group commit): exactly one delivery per upload', async () => {
  const before = (await deliveriesOf(t, machine.partId)).filter((r) => r.trigger_name === 'tab').length;
  await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      uploadTabular([{ cpu: i, coordinate: { latitude: 80 } }], { name: `g${i}`, base: 100_000 + i }),
    ),
  );
  const tab = (await deliveriesOf(t, machine.partId)).filter((r) => r.trigger_name === 'tab');
  assert.equal(tab.length - before, 24);
  const components = new Set(
    tab.slice(before).map((r) => (r.facts.data as { componentName: string }).componentName),
  );
  assert.equal(components.size, 24);
});

test('an upload whose transaction rolls back records no delivery and no job', async () => {
  const before = await deliveriesOf(t, machine.partId);
  const jobsBefore = (await queuedDeliveryIds(t)).size;
  const failing = async () => async () => {
    throw new Error('injected failure before COMMIT');
  };
  t.cloud.deps.uploadObservers.push(failing);
  try {
    await assert.rejects(uploadTabular([{ cpu: 99, coordinate: { latitude: 1 } }], { base: 200_000 }));
    await assert.rejects(
      sdk.dataClient.binaryDataCaptureUpload(
        new Uint8Array([9, 9, 9]),
        machine.partId,
        'rdk:component:camera',
        'cam',
        'ReadImage',
        '.bin',
        [at(1), at(2)],
      ),
    );
  } finally {
    t.cloud.deps.uploadObservers.pop();
  }
  assert.equal((await deliveriesOf(t, machine.partId)).length, before.length);
  assert.equal((await queuedDeliveryIds(t)).size, jobsBefore);
  const readings = await t.cloud.deps.db.query(
    `SELECT 1 FROM readings r WHERE r.organization_id = $1 AND (r.data->'readings'->>'cpu') = '99'
       AND r.time_requested = $2`,
    [t.bootstrap.organization_id, at(200_000)],
  );
  assert.equal(readings.rowCount, 0, 'the readings rolled back with it');
});

test('seconds_between_notifications limits per trigger and destination, with the injected clock', async () => {
  const limited = await newMachine(owner, t.bootstrap.location_id, 'limited-bot');
  await setTriggers(owner, limited.partId, [
    {
      name: 'slow',
      event: { type: 'part_data_ingested', data_ingested: { data_types: ['tabular'] } },
      notifications: [hook('slow', { seconds_between_notifications: 60 }), hook('fast')],
    },
  ]);
  const upload = (i: number) =>
    sdk.dataClient.tabularDataCaptureUpload(
      [{ readings: { i } }] as never,
      limited.partId,
      sensor,
      'temp',
      'Readings',
      [[at(i), at(i + 1)]],
    );
  const count = async () => {
    const rows = await deliveriesOf(t, limited.partId);
    return [
      rows.filter((r) => r.destination.endsWith('/slow')).length,
      rows.filter((r) => r.destination.endsWith('/fast')).length,
    ];
  };
  await upload(1);
  assert.deepEqual(await count(), [1, 1]);
  nowMs += 30_000;
  await upload(2);
  assert.deepEqual(await count(), [1, 2], '30 s later: limited');
  nowMs += 29_999;
  await upload(3);
  assert.deepEqual(await count(), [1, 3], '59.999 s after the last recording: still limited');
  nowMs += 1;
  await upload(4);
  assert.deepEqual(await count(), [2, 4], '60 s: allowed again');
  // Concurrent uploads at one instant: the limit still lets only one through.
  nowMs += 120_000;
  await Promise.all(Array.from({ length: 8 }, (_, i) => upload(10 + i)));
  assert.deepEqual(await count(), [3, 12]);
});
