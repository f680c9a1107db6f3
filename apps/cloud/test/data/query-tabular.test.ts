import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fromBinary, type JsonObject, type MessageInitShape, toJson } from '@bufbuild/protobuf';
import { anyUnpack, timestampMs, ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { dataPb, dataSyncPb } from '@mcloud/protocol';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import {
  createLocation,
  createOrganization,
  createPart,
  createScopedKey,
  type SeedPart,
  seedReadings,
} from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { ts, uploadMetadata } from './ingest-fixtures.ts';

const now = { ms: Date.parse('2025-03-11T12:00:00Z') };
let t: TestCloud;
let owner: AuthedClients;
let org: string;
let rover: SeedPart;
let arm: SeedPart;
let otherOrg: Awaited<ReturnType<typeof createOrganization>>;
const base = Date.parse('2025-03-10T00:00:00Z');
const minute = 60_000;

before(async () => {
  t = await startTestCloud({ clock: { nowMs: () => now.ms } });
  org = t.bootstrap.organization_id;
  owner = await createAuthedClients(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key });
  const location2 = await createLocation(t.cloud, org, 'second');
  rover = await createPart(
    t.cloud,
    { organizationId: org, locationId: t.bootstrap.location_id },
    { robotName: 'rover' },
  );
  arm = await createPart(
    t.cloud,
    { organizationId: org, locationId: location2 },
    { robotName: 'arm', partName: 'arm-part' },
  );
  await seedReadings(
    t.cloud,
    rover,
    { componentName: 'sensor-1', tags: ['a'] },
    Array.from({ length: 30 }, (_, i) => ({
      capturedAtMs: base + i * minute,
      data: { readings: { i, kind: 'sensor' } },
    })),
  );
  await seedReadings(
    t.cloud,
    rover,
    { componentType: 'rdk:component:motor', componentName: 'motor-1', methodName: 'Position' },
    // Two readings share a capture time: the cursor must still separate them.
    Array.from({ length: 10 }, (_, i) => ({
      capturedAtMs: base + Math.min(i, 8) * minute + 30_000,
      data: { position: i },
    })),
  );
  await seedReadings(
    t.cloud,
    arm,
    { componentName: 'sensor-2', tags: ['b'], methodParameters: { pin_name: '7', scale: 2 } },
    Array.from({ length: 5 }, (_, i) => ({ capturedAtMs: base + i * 7 * minute, data: { readings: { i } } })),
  );
  otherOrg = await createOrganization(t.cloud, 'other');
  const foreign = await createPart(
    t.cloud,
    { organizationId: otherOrg.organizationId, locationId: otherOrg.locationId },
    { robotName: 'rover' },
  );
  await seedReadings(t.cloud, foreign, { componentName: 'sensor-1', tags: ['a'] }, [
    { capturedAtMs: base, data: { secret: true } },
  ]);
});
after(async () => {
  await t?.stop();
});

type FilterInit = MessageInitShape<typeof dataPb.FilterSchema>;

async function query(
  filter: FilterInit = {},
  options: {
    limit?: number;
    last?: string;
    order?: dataPb.Order;
    countOnly?: boolean;
    clients?: AuthedClients;
  } = {},
) {
  return (options.clients ?? owner).data.tabularDataByFilter({
    dataRequest: {
      filter,
      limit: BigInt(options.limit ?? 0),
      last: options.last ?? '',
      sortOrder: options.order ?? dataPb.Order.UNSPECIFIED,
    },
    countOnly: options.countOnly ?? false,
  });
}

async function count(filter: FilterInit = {}, clients?: AuthedClients): Promise<number> {
  const response = await query(filter, { countOnly: true, ...(clients ? { clients } : {}) });
  assert.equal(response.data.length, 0);
  return Number(response.count);
}

/** A fresh organization with one machine part (robot `r`). */
async function organizationWithPart(name: string) {
  const organization = await createOrganization(t.cloud, name);
  const part = await createPart(
    t.cloud,
    { organizationId: organization.organizationId, locationId: organization.locationId },
    { robotName: 'r' },
  );
  return { organization, part };
}

async function expectCode(promise: Promise<unknown>, code: Code, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConnectError, `expected ConnectError, got ${String(error)}`);
    assert.equal(error.code, code, `code of: ${error.message}`);
    assert.match(error.rawMessage, pattern);
    return true;
  });
}

/** DeleteTabularData with `delete_older_than_days`, answering how many readings it removed. */
async function deleteOlderThan(
  clients: AuthedClients,
  organizationId: string,
  days: number,
): Promise<number> {
  const { deletedCount } = await clients.data.deleteTabularData({
    organizationId,
    deleteOlderThanDays: days,
  });
  return Number(deletedCount);
}

async function readAll(order: dataPb.Order, limit: number, filter: FilterInit = {}) {
  const seen: { time: number; data: JsonObject }[] = [];
  let last = '';
  let pages = 0;
  for (;;) {
    const page = await query(filter, { limit, last, order });
    pages++;
    if (page.data.length === 0) break;
    assert.notEqual(page.last, '', 'a page with data has a cursor');
    assert.notEqual(page.last, last, 'the cursor advances');
    for (const item of page.data) {
      assert.ok(item.metadataIndex < page.metadata.length, 'metadata_index is valid');
      seen.push({ time: timestampMs(item.timeReceived as never), data: item.data as JsonObject });
    }
    last = page.last;
    assert.ok(pages < 100);
  }
  const again = await query(filter, { limit, last, order });
  assert.equal(again.data.length, 0, 'after the end stays empty');
  return seen;
}

test('count_only counts every reading the caller reaches, never other organizations', async () => {
  assert.equal(await count(), 45);
  assert.equal(await count({ organizationIds: [org] }), 45);
  await expectCode(
    count({ organizationIds: [otherOrg.organizationId] }),
    Code.PermissionDenied,
    /organization_ids/,
  );
});

test('first page: default limit 50, newest first, metadata de-duplicated with valid indexes', async () => {
  const page = await query();
  assert.equal(page.data.length, 45);
  assert.equal(Number(page.count), 45);
  assert.equal(page.metadata.length, 3);
  const times = page.data.map((item) => timestampMs(item.timeReceived as never));
  assert.deepEqual(
    times,
    [...times].sort((a, b) => b - a),
  );
  assert.ok(Number(page.totalSizeBytes) > 0);
  for (const item of page.data) assert.ok(item.metadataIndex < page.metadata.length);
  const arm = page.metadata.find((metadata) => metadata.componentName === 'sensor-2');
  assert.ok(arm);
  assert.equal(arm.robotName, 'arm');
  assert.equal(arm.partName, 'arm-part');
  assert.equal(arm.componentType, 'rdk:component:sensor');
  assert.deepEqual(arm.tags, ['b']);
  const pin = arm.methodParameters.pin_name;
  assert.ok(pin);
  assert.equal(pin.typeUrl, 'type.googleapis.com/google.protobuf.Value');
  assert.equal(toJson(ValueSchema, anyUnpack(pin, ValueSchema) as never), '7');
  assert.equal(
    toJson(ValueSchema, fromBinary(ValueSchema, (arm.methodParameters.scale as { value: Uint8Array }).value)),
    2,
  );
});

test('paging with cursors walks every reading exactly once, in both orders', async () => {
  for (const order of [dataPb.Order.DESCENDING, dataPb.Order.ASCENDING, dataPb.Order.UNSPECIFIED]) {
    for (const limit of [1, 7, 45, 1000]) {
      const seen = await readAll(order, limit);
      assert.equal(seen.length, 45, `order ${order} limit ${limit}`);
      const keys = new Set(seen.map((item) => JSON.stringify(item)));
      assert.equal(keys.size, 45, 'no duplicates');
      const times = seen.map((item) => item.time);
      const sorted = [...times].sort((a, b) => (order === dataPb.Order.ASCENDING ? a - b : b - a));
      assert.deepEqual(times, sorted);
    }
  }
  // A filtered walk (source-resolved path) pages the same way.
  assert.equal((await readAll(dataPb.Order.ASCENDING, 4, { componentName: 'motor-1' })).length, 10);
});

test('every Filter field narrows tabular data', async () => {
  assert.equal(await count({ componentName: 'sensor-1' }), 30);
  assert.equal(await count({ componentType: 'rdk:component:motor' }), 10);
  assert.equal(await count({ componentType: 'motor' }), 10, 'short component type');
  assert.equal(await count({ componentType: 'sensor' }), 35);
  assert.equal(await count({ method: 'Position' }), 10);
  assert.equal(await count({ robotName: 'rover' }), 40);
  assert.equal(await count({ robotId: arm.robotId }), 5);
  assert.equal(await count({ partName: 'arm-part' }), 5);
  assert.equal(await count({ partId: rover.partId }), 40);
  assert.equal(await count({ locationIds: [arm.locationId] }), 5);
  assert.equal(await count({ locationIds: [arm.locationId, rover.locationId] }), 45);
  const interval = {
    start: { seconds: BigInt((base + 10 * minute) / 1000), nanos: 0 },
    end: { seconds: BigInt((base + 19 * minute) / 1000), nanos: 0 },
  };
  assert.equal(await count({ componentName: 'sensor-1', interval }), 10, 'both ends inclusive');
  assert.equal(await count({ interval: { start: interval.start } }), 20 + 0 + 3);
  assert.equal(
    await count({ tagsFilter: { type: dataPb.TagsFilterType.MATCH_BY_OR, tags: ['a', 'zzz'] } }),
    30,
  );
  assert.equal(await count({ tagsFilter: { type: dataPb.TagsFilterType.UNSPECIFIED, tags: ['b'] } }), 5);
  assert.equal(await count({ tagsFilter: { type: dataPb.TagsFilterType.UNSPECIFIED, tags: [] } }), 45);
  assert.equal(await count({ tagsFilter: { type: dataPb.TagsFilterType.TAGGED, tags: [] } }), 35);
  assert.equal(await count({ tagsFilter: { type: dataPb.TagsFilterType.UNTAGGED, tags: [] } }), 10);
  assert.equal(await count({ mimeType: ['image/jpeg'] }), 0, 'tabular data has no MIME type');
  assert.equal(await count({ bboxLabels: ['cat'] }), 0);
  assert.equal(await count({ datasetId: 'abc' }), 0);
  assert.equal(await count({ componentName: 'sensor-1', robotName: 'arm' }), 0, 'conditions are AND-ed');
  const page = await query({ componentName: 'sensor-2' }, { limit: 2, order: dataPb.Order.ASCENDING });
  assert.deepEqual(
    page.data.map((item) => item.data),
    [{ readings: { i: 0 } }, { readings: { i: 1 } }],
  );
});

test('bad input names the field and the limit', async () => {
  await expectCode(query({}, { last: 'garbage!' }), Code.InvalidArgument, /last/);
  await expectCode(
    query({}, { last: Buffer.from('t1:x:y').toString('base64url') }),
    Code.InvalidArgument,
    /last/,
  );
  await expectCode(
    query({}, { last: Buffer.from('b1:1:a/b/c').toString('base64url') }),
    Code.InvalidArgument,
    /last/,
  );
  await expectCode(query({ robotId: 'nope' }), Code.InvalidArgument, /filter\.robot_id.*UUID/);
  await expectCode(query({ locationIds: [''] }), Code.InvalidArgument, /location_ids\[0\]/);
  await expectCode(query({ componentName: 'x'.repeat(600) }), Code.InvalidArgument, /component_name.*512/);
  const start = { seconds: 100n, nanos: 0 };
  const end = { seconds: 50n, nanos: 0 };
  await expectCode(query({ interval: { start, end } }), Code.InvalidArgument, /interval/);
});

test('scoping: a location key sees its location, a machine only its own part, other orgs nothing', async () => {
  const locationKey = await createScopedKey(t.cloud, org, {
    resourceType: 'location',
    resourceId: arm.locationId,
  });
  const located = await createAuthedClients(t.url, locationKey);
  assert.equal(await count({}, located), 5);
  assert.equal(await count({ robotName: 'rover' }, located), 0);
  const machine = await createAuthedClients(t.url, { partId: rover.partId, secret: rover.partSecret });
  assert.equal(await count({}, machine), 40);
  assert.equal(await count({ partId: arm.partId }, machine), 0);
  const stranger = await createAuthedClients(t.url, { keyId: otherOrg.keyId, key: otherOrg.key });
  assert.equal(await count({}, stranger), 1);
  const page = await query({}, { clients: stranger });
  assert.deepEqual(page.data[0]?.data, { secret: true });
});

test('ExportTabularData streams one source oldest first with time_captured, method_parameters and payload', async () => {
  const rows = [];
  for await (const row of owner.data.exportTabularData({
    partId: rover.partId,
    resourceName: 'sensor-1',
    resourceSubtype: 'rdk:component:sensor',
    methodName: 'Readings',
  })) {
    rows.push(row);
  }
  assert.equal(rows.length, 30);
  for (const row of rows) {
    assert.ok(row.timeCaptured && row.methodParameters && row.payload);
    assert.equal(row.robotName, 'rover');
    assert.equal(row.partName, 'rover-main');
    assert.equal(row.organizationId, org);
    assert.deepEqual(row.tags, ['a']);
  }
  assert.deepEqual(rows[0]?.payload, { readings: { i: 0, kind: 'sensor' } });
  assert.deepEqual(rows[0]?.methodParameters, {});
  const withParams = [];
  for await (const row of owner.data.exportTabularData({
    partId: arm.partId,
    resourceName: 'sensor-2',
    resourceSubtype: 'sensor',
    methodName: 'Readings',
    additionalParameters: { pin_name: '7', scale: 2 },
    interval: { start: { seconds: BigInt((base + 7 * minute) / 1000), nanos: 0 } },
  })) {
    withParams.push(row);
  }
  assert.equal(withParams.length, 4);
  assert.deepEqual(withParams[0]?.methodParameters, { pin_name: '7', scale: 2 });
  const none = [];
  for await (const row of owner.data.exportTabularData({
    partId: arm.partId,
    resourceName: 'sensor-2',
    resourceSubtype: 'sensor',
    methodName: 'Readings',
    additionalParameters: { pin_name: '8' },
  })) {
    none.push(row);
  }
  assert.equal(none.length, 0);
  const iterate = async (partId: string) => {
    for await (const _ of owner.data.exportTabularData({
      partId,
      resourceName: 'x',
      resourceSubtype: '',
      methodName: 'y',
    })) {
      /* drain */
    }
  };
  await expectCode(iterate('not-a-uuid'), Code.InvalidArgument, /part_id/);
});

test('GetLatestTabularData: newest point, time_synced, empty OK when unknown or synced over a year ago', async () => {
  const latest = await owner.data.getLatestTabularData({
    partId: rover.partId,
    resourceName: 'sensor-1',
    resourceSubtype: 'rdk:component:sensor',
    methodName: 'Readings',
  });
  assert.deepEqual(latest.payload, { readings: { i: 29, kind: 'sensor' } });
  assert.equal(timestampMs(latest.timeCaptured as never), base + 29 * minute);
  assert.equal(timestampMs(latest.timeSynced as never), base + 29 * minute + 1000);
  const unknown = await owner.data.getLatestTabularData({
    partId: arm.partId,
    resourceName: 'nope',
    resourceSubtype: 'sensor',
    methodName: 'Readings',
  });
  assert.equal(unknown.payload, undefined);
  assert.equal(unknown.timeCaptured, undefined);
  const stranger = await createAuthedClients(t.url, { keyId: otherOrg.keyId, key: otherOrg.key });
  const foreign = await stranger.data.getLatestTabularData({
    partId: rover.partId,
    resourceName: 'sensor-1',
    resourceSubtype: '',
    methodName: 'Readings',
  });
  assert.equal(foreign.payload, undefined, 'another organization sees nothing');
  const saved = now.ms;
  now.ms = base + 400 * 24 * 60 * minute;
  try {
    const stale = await owner.data.getLatestTabularData({
      partId: rover.partId,
      resourceName: 'sensor-1',
      resourceSubtype: 'sensor',
      methodName: 'Readings',
    });
    assert.equal(stale.payload, undefined);
  } finally {
    now.ms = saved;
  }
});

test('DeleteTabularData counts UTC calendar days; 0 deletes everything', async () => {
  const { organization: victim, part } = await organizationWithPart('deletions');
  const times = [
    '2025-03-09T23:59:59.999Z',
    '2025-03-10T00:00:00Z',
    '2025-03-10T23:59:59.999Z',
    '2025-03-11T00:00:00Z',
    '2025-03-11T11:00:00Z',
  ];
  await seedReadings(
    t.cloud,
    part,
    {},
    times.map((time) => ({ capturedAtMs: Date.parse(time), data: { time } })),
  );
  const clients = await createAuthedClients(t.url, { keyId: victim.keyId, key: victim.key });
  const remove = (days: number) => deleteOlderThan(clients, victim.organizationId, days);
  now.ms = Date.parse('2025-03-11T12:00:00Z');
  assert.equal(await remove(3), 0);
  assert.equal(await remove(2), 1, 'N=2 on March 11 deletes through March 9');
  assert.equal(await remove(1), 2, 'N=1 on March 11 deletes through March 10 23:59:59.999');
  assert.equal(await remove(1), 0);
  assert.equal(await count({}, clients), 2);
  await expectCode(
    owner.data.deleteTabularData({ organizationId: victim.organizationId, deleteOlderThanDays: 0 }),
    Code.PermissionDenied,
    /organization/,
  );
  await expectCode(
    clients.data.deleteTabularData({ organizationId: 'x', deleteOlderThanDays: 0 }),
    Code.InvalidArgument,
    /organization_id/,
  );
  assert.equal(await remove(0), 2);
  assert.equal(await count({}, clients), 0);
  assert.equal(await count(), 45, 'other organizations untouched');
});

test('DeleteTabularData deletes the receipts of the uploads it deleted entirely: uploading them again stores again', async () => {
  const { organization: victim, part } = await organizationWithPart('receipts');
  const clients = await createAuthedClients(t.url, { keyId: victim.keyId, key: victim.key });
  now.ms = Date.parse('2025-03-11T12:00:00Z');
  const upload = (componentName: string, times: string[]) =>
    clients.dataSync.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, { componentName }),
      sensorContents: times.map((time) => ({
        metadata: { timeRequested: ts(Date.parse(time)), timeReceived: ts(Date.parse(time)) },
        data: { case: 'struct' as const, value: { time } },
      })),
    });
  const stored = async (componentName: string) => {
    const result = await t.cloud.deps.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM readings r JOIN capture_sources s ON s.id = r.source_id
        WHERE r.organization_id = $1 AND s.component_name = $2`,
      [victim.organizationId, componentName],
    );
    return result.rows[0]?.n;
  };
  const uploads = {
    old: ['2025-03-09T10:00:00Z', '2025-03-09T10:01:00Z'],
    straddling: ['2025-03-10T23:00:00Z', '2025-03-11T01:00:00Z'],
    recent: ['2025-03-11T10:00:00Z'],
  };
  const first: Record<string, string> = {};
  for (const [name, times] of Object.entries(uploads)) {
    first[name] = (await upload(name, times)).binaryDataId;
    assert.equal((await upload(name, times)).binaryDataId, first[name], `${name}: a retry is a duplicate`);
  }
  const image = {
    metadata: uploadMetadata(part.partId, { type: dataSyncPb.DataType.BINARY_SENSOR, mimeType: 'image/png' }),
    sensorContents: [
      {
        metadata: { timeRequested: ts(now.ms) },
        data: { case: 'binary' as const, value: Buffer.from('png') },
      },
    ],
  };
  const imageId = (await clients.dataSync.dataCaptureUpload(image)).binaryDataId;

  const remove = (days: number) => deleteOlderThan(clients, victim.organizationId, days);
  assert.equal(await remove(1), 3, 'everything captured before March 11');
  const oldAgain = await upload('old', uploads.old);
  assert.notEqual(oldAgain.binaryDataId, first.old, 'deleted entirely: stored again');
  assert.equal(await stored('old'), 2);
  assert.equal(
    (await upload('old', uploads.old)).binaryDataId,
    oldAgain.binaryDataId,
    'and idempotent again',
  );
  // Partly deleted: storing it again would duplicate its surviving reading, so it stays a duplicate.
  assert.equal((await upload('straddling', uploads.straddling)).binaryDataId, first.straddling);
  assert.equal(await stored('straddling'), 1);
  assert.equal((await upload('recent', uploads.recent)).binaryDataId, first.recent);
  assert.equal(await stored('recent'), 1);

  assert.equal(await remove(0), 4);
  for (const [name, times] of Object.entries(uploads)) {
    assert.notEqual((await upload(name, times)).binaryDataId, first[name], `${name}: stored again`);
    assert.equal(await stored(name), times.length);
  }
  // Binary data is not tabular data: its receipt stays with it.
  assert.equal((await clients.dataSync.dataCaptureUpload(image)).binaryDataId, imageId);
  assert.equal(await count(), 45, 'other organizations untouched');
});

test('a filter matching more sources than are probed one by one walks the organization index instead', async () => {
  const { organization: crowd, part } = await organizationWithPart('many-sources');
  const sources = 205;
  for (let i = 0; i < sources; i++) {
    await seedReadings(t.cloud, part, { componentName: `s-${i}`, tags: ['many'] }, [
      { capturedAtMs: base + i * minute, data: { i } },
    ]);
  }
  await seedReadings(t.cloud, part, { componentName: 'other', tags: ['few'] }, [
    { capturedAtMs: base, data: { other: true } },
  ]);
  const clients = await createAuthedClients(t.url, { keyId: crowd.keyId, key: crowd.key });
  const many = { tagsFilter: { tags: ['many'] } };
  const seen: number[] = [];
  let last = '';
  for (;;) {
    const page = await query(many, { clients, limit: 50, last });
    seen.push(...page.data.map((row) => Number((row.data as { i: number }).i)));
    assert.ok(page.data.every((row) => page.metadata[row.metadataIndex]?.tags.includes('many')));
    if (page.data.length === 0 || !page.last) break;
    last = page.last;
  }
  assert.deepEqual(
    seen,
    Array.from({ length: sources }, (_, i) => sources - 1 - i),
    'newest first, each reading once',
  );
  assert.equal(await count(many, clients), sources);
  const few = await query({ tagsFilter: { tags: ['few'] } }, { clients });
  assert.deepEqual(
    few.data.map((row) => row.data),
    [{ other: true }],
  );
  assert.equal((await query({ componentName: 'nothing' }, { clients })).data.length, 0);
});
