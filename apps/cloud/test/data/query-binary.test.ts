import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { dataPb, dataSyncPb } from '@mcloud/protocol';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import {
  createLocation,
  createOrganization,
  createPart,
  createScopedKey,
  type SeedPart,
  seedBinary,
} from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

type FilterInit = MessageInitShape<typeof dataPb.FilterSchema>;

const now = { ms: Date.parse('2025-03-11T12:00:00Z') };
const base = Date.parse('2025-03-10T00:00:00Z');
const minute = 60_000;
let t: TestCloud;
let owner: AuthedClients;
let org: string;
let rover: SeedPart;
let arm: SeedPart;
let otherOrg: Awaited<ReturnType<typeof createOrganization>>;
let stranger: AuthedClients;
let foreignId: string;
const roverIds: string[] = [];
const armIds: string[] = [];

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
  // 12 rover JPEGs (every 3rd tagged 'front', the first two with a 'cat' box), 6 arm PNGs, 2 point clouds, 1 internal.
  for (let i = 0; i < 12; i++) {
    roverIds.push(
      await seedBinary(t.cloud, rover, {
        capturedAtMs: base + i * minute,
        tags: i % 3 === 0 ? ['front'] : [],
        boxes: i < 2 ? [{ label: 'cat', xMin: 0.1, yMin: 0.1, xMax: 0.5, yMax: 0.5, confidence: 0.9 }] : [],
        methodParameters: { mime_type: 'image/jpeg' },
      }),
    );
  }
  for (let i = 0; i < 6; i++) {
    armIds.push(
      await seedBinary(t.cloud, arm, {
        capturedAtMs: base + i * 2 * minute + 1,
        mimeType: 'image/png',
        fileExt: '.png',
        componentName: 'wrist-cam',
        tags: ['arm'],
        boxes: i === 0 ? [{ label: 'dog', xMin: 0, yMin: 0, xMax: 1, yMax: 1 }] : [],
      }),
    );
  }
  for (let i = 0; i < 2; i++) {
    await seedBinary(t.cloud, rover, {
      capturedAtMs: base + 30 * minute + i,
      mimeType: 'pointcloud/pcd',
      fileExt: '.pcd',
      componentType: 'rdk:component:camera',
      componentName: 'lidar',
      methodName: 'NextPointCloud',
    });
  }
  await seedBinary(t.cloud, rover, { capturedAtMs: base, internal: true, componentName: 'slam' });
  otherOrg = await createOrganization(t.cloud, 'other');
  const foreignPart = await createPart(
    t.cloud,
    { organizationId: otherOrg.organizationId, locationId: otherOrg.locationId },
    { robotName: 'rover' },
  );
  foreignId = await seedBinary(t.cloud, foreignPart, { capturedAtMs: base, tags: ['front'] });
  stranger = await createAuthedClients(t.url, { keyId: otherOrg.keyId, key: otherOrg.key });
});
after(async () => {
  await t?.stop();
});

async function byFilter(
  filter: FilterInit = {},
  options: {
    limit?: number;
    last?: string;
    order?: dataPb.Order;
    countOnly?: boolean;
    includeBinary?: boolean;
    internal?: boolean;
    clients?: AuthedClients;
  } = {},
) {
  return (options.clients ?? owner).data.binaryDataByFilter({
    dataRequest: {
      filter,
      limit: BigInt(options.limit ?? 0),
      last: options.last ?? '',
      sortOrder: options.order ?? dataPb.Order.UNSPECIFIED,
    },
    includeBinary: options.includeBinary ?? false,
    countOnly: options.countOnly ?? false,
    includeInternalData: options.internal ?? false,
  });
}

async function count(filter: FilterInit = {}, clients?: AuthedClients): Promise<number> {
  return Number((await byFilter(filter, { countOnly: true, ...(clients ? { clients } : {}) })).count);
}

async function expectCode(promise: Promise<unknown>, code: Code, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConnectError, `expected ConnectError, got ${String(error)}`);
    assert.equal(error.code, code, `code of: ${error.message}`);
    assert.match(error.rawMessage, pattern);
    return true;
  });
}

test('every Filter field narrows binary data; internal data only on request', async () => {
  assert.equal(await count(), 20);
  assert.equal(Number((await byFilter({}, { countOnly: true, internal: true })).count), 21);
  assert.equal(await count({ componentName: 'wrist-cam' }), 6);
  assert.equal(await count({ componentType: 'camera' }), 20);
  assert.equal(await count({ componentType: 'rdk:component:camera', method: 'NextPointCloud' }), 2);
  assert.equal(await count({ robotName: 'arm' }), 6);
  assert.equal(await count({ robotId: rover.robotId }), 14);
  assert.equal(await count({ partName: 'rover-main' }), 14);
  assert.equal(await count({ partId: arm.partId }), 6);
  assert.equal(await count({ locationIds: [arm.locationId] }), 6);
  assert.equal(await count({ organizationIds: [org] }), 20);
  await expectCode(
    count({ organizationIds: [otherOrg.organizationId] }),
    Code.PermissionDenied,
    /organization_ids/,
  );
  assert.equal(await count({ mimeType: ['image/jpeg', 'image/png'] }), 18);
  assert.equal(await count({ mimeType: ['pointcloud/pcd'] }), 2);
  const seconds = (ms: number) => ({
    seconds: BigInt(Math.floor(ms / 1000)),
    nanos: (ms % 1000) * 1_000_000,
  });
  assert.equal(
    await count({
      componentName: 'camera-1',
      interval: { start: seconds(base + 2 * minute), end: seconds(base + 5 * minute) },
    }),
    4,
  );
  assert.equal(
    await count({ tagsFilter: { type: dataPb.TagsFilterType.MATCH_BY_OR, tags: ['front', 'arm'] } }),
    10,
  );
  assert.equal(await count({ tagsFilter: { tags: ['front'] } }), 4);
  assert.equal(await count({ tagsFilter: {} }), 20);
  assert.equal(await count({ tagsFilter: { type: dataPb.TagsFilterType.TAGGED } }), 10);
  assert.equal(await count({ tagsFilter: { type: dataPb.TagsFilterType.UNTAGGED } }), 10);
  assert.equal(await count({ bboxLabels: ['cat'] }), 2);
  assert.equal(await count({ bboxLabels: ['cat', 'dog'] }), 3);
  assert.equal(await count({ datasetId: 'none' }), 0);
  assert.equal(await count({}, stranger), 1);
});

test('paging walks every item once in both orders; metadata is complete; count and total size', async () => {
  for (const order of [dataPb.Order.ASCENDING, dataPb.Order.DESCENDING]) {
    const seen: string[] = [];
    const times: number[] = [];
    let last = '';
    for (;;) {
      const page = await byFilter({}, { limit: 3, last, order });
      if (page.data.length === 0) break;
      assert.equal(Number(page.count), page.data.length);
      assert.notEqual(page.last, '');
      for (const item of page.data) {
        const metadata = item.metadata;
        assert.ok(metadata?.captureMetadata, 'capture_metadata always set');
        assert.equal(item.binary.length, 0, 'no bytes without include_binary');
        seen.push(metadata.binaryDataId);
        times.push(timestampMs(metadata.timeReceived as never));
      }
      last = page.last;
    }
    assert.equal(seen.length, 20);
    assert.equal(new Set(seen).size, 20);
    assert.deepEqual(
      times,
      [...times].sort((a, b) => (order === dataPb.Order.ASCENDING ? a - b : b - a)),
    );
  }
  const first = await byFilter(
    { robotName: 'rover', componentName: 'camera-1' },
    { limit: 1, order: dataPb.Order.ASCENDING },
  );
  const metadata = first.data[0]?.metadata;
  assert.ok(metadata?.captureMetadata);
  assert.equal(metadata.binaryDataId, roverIds[0]);
  assert.equal(metadata.id, roverIds[0]?.split('/')[2]);
  assert.equal(metadata.captureMetadata.robotName, 'rover');
  assert.equal(metadata.captureMetadata.partName, 'rover-main');
  assert.equal(metadata.captureMetadata.mimeType, 'image/jpeg');
  assert.equal(
    metadata.captureMetadata.methodParameters.mime_type?.typeUrl,
    'type.googleapis.com/google.protobuf.Value',
  );
  assert.equal(metadata.annotations?.bboxes[0]?.label, 'cat');
  assert.equal(metadata.annotations?.bboxes[0]?.confidence, 0.9);
  assert.match(metadata.uri, /\/download\//);
  const download = await fetch(metadata.uri);
  assert.equal(download.status, 200);
  assert.equal(Buffer.from(await download.arrayBuffer()).toString(), `image ${roverIds[0]?.split('/')[2]}`);
  assert.ok(Number(first.totalSizeBytes) > 0);
  await expectCode(byFilter({}, { last: 'nope' }), Code.InvalidArgument, /last/);
  const tabularCursor = Buffer.from('t1:1:5').toString('base64url');
  await expectCode(byFilter({}, { last: tabularCursor }), Code.InvalidArgument, /last/);
});

test('include_binary returns the stored bytes', async () => {
  const page = await byFilter(
    { componentName: 'wrist-cam' },
    { includeBinary: true, limit: 100, order: dataPb.Order.ASCENDING },
  );
  assert.equal(page.data.length, 6);
  assert.equal(Buffer.from(page.data[0]?.binary ?? []).toString(), `image ${armIds[0]?.split('/')[2]}`);
});

test('BinaryDataByIDs: both ID forms, foreign and unknown IDs are left out, empty list refused', async () => {
  const [first, second] = roverIds as [string, string];
  const [org0, location0, file0] = first.split('/') as [string, string, string];
  const response = await owner.data.binaryDataByIDs({
    binaryDataIds: [second, foreignId, `${org}/${rover.locationId}/ffffffffffffffffffffffff`],
    binaryIds: [{ organizationId: org0, locationId: location0, fileId: file0 }],
    includeBinary: true,
  });
  assert.deepEqual(
    response.data.map((item) => item.metadata?.binaryDataId),
    [second, first],
  );
  assert.equal(Number(response.count), 2);
  assert.ok(response.data[0]?.binary.length);
  await expectCode(
    owner.data.binaryDataByIDs({ binaryDataIds: [] }),
    Code.InvalidArgument,
    /binary_data_ids/,
  );
  await expectCode(
    owner.data.binaryDataByIDs({ binaryDataIds: ['a/b'] }),
    Code.InvalidArgument,
    /binary_data_ids\[0\]/,
  );
  const foreign = await stranger.data.binaryDataByIDs({ binaryDataIds: [first] });
  assert.equal(foreign.data.length, 0);
});

test('tags: add by IDs is a set union, remove counts items that lost a tag, by-filter variants, TagsByFilter', async () => {
  const ids = armIds.slice(0, 3);
  await owner.data.addTagsToBinaryDataByIDs({ binaryDataIds: ids, tags: ['arm', 'new', 'new'] });
  let items = await owner.data.binaryDataByIDs({ binaryDataIds: ids });
  for (const item of items.data) assert.deepEqual(item.metadata?.captureMetadata?.tags, ['arm', 'new']);
  const removed = await owner.data.removeTagsFromBinaryDataByIDs({
    binaryDataIds: [...ids, armIds[4] as string],
    tags: ['new'],
  });
  assert.equal(Number(removed.deletedCount), 3);
  items = await owner.data.binaryDataByIDs({ binaryDataIds: ids });
  for (const item of items.data) assert.deepEqual(item.metadata?.captureMetadata?.tags, ['arm']);
  await expectCode(
    owner.data.addTagsToBinaryDataByIDs({ binaryDataIds: ids, tags: [] }),
    Code.InvalidArgument,
    /tags/,
  );
  await expectCode(
    owner.data.addTagsToBinaryDataByIDs({ binaryDataIds: [], tags: ['x'] }),
    Code.InvalidArgument,
    /binary_data_ids/,
  );
  await expectCode(
    owner.data.addTagsToBinaryDataByIDs({ binaryDataIds: ids, tags: ['x'.repeat(300)] }),
    Code.InvalidArgument,
    /tags\[0\].*256/,
  );
  // Foreign IDs are silently skipped: nothing of the other organization changes.
  await owner.data.addTagsToBinaryDataByIDs({ binaryDataIds: [foreignId], tags: ['hijack'] });
  assert.deepEqual((await stranger.data.tagsByFilter({})).tags, ['front']);

  await owner.data.addTagsToBinaryDataByFilter({ filter: { mimeType: ['pointcloud/pcd'] }, tags: ['lidar'] });
  assert.equal(await count({ tagsFilter: { tags: ['lidar'] } }), 2);
  assert.deepEqual((await owner.data.tagsByFilter({ filter: { robotName: 'rover' } })).tags, [
    'front',
    'lidar',
  ]);
  assert.deepEqual((await owner.data.tagsByFilter({})).tags, ['arm', 'front', 'lidar']);
  const untagged = await owner.data.removeTagsFromBinaryDataByFilter({
    filter: { robotName: 'rover' },
    tags: ['lidar'],
  });
  assert.equal(Number(untagged.deletedCount), 2);
  await expectCode(owner.data.removeTagsFromBinaryDataByFilter({ tags: [] }), Code.InvalidArgument, /tags/);
});

test('bounding boxes: add validates, update by presence re-validates, remove, labels by filter', async () => {
  const id = armIds[5] as string;
  const add = (box: Partial<MessageInitShape<typeof dataPb.AddBoundingBoxToImageByIDRequestSchema>>) =>
    owner.data.addBoundingBoxToImageByID({
      binaryDataId: id,
      label: 'bird',
      xMinNormalized: 0.1,
      yMinNormalized: 0.2,
      xMaxNormalized: 0.3,
      yMaxNormalized: 0.4,
      ...box,
    });
  const { bboxId } = await add({ confidence: 0.5 });
  assert.match(bboxId, /^[0-9a-f]{24}$/);
  await expectCode(add({ xMinNormalized: -0.1 }), Code.InvalidArgument, /x_min_normalized.*between 0 and 1/);
  await expectCode(add({ yMaxNormalized: 1.5 }), Code.InvalidArgument, /y_max_normalized.*between 0 and 1/);
  await expectCode(
    add({ xMinNormalized: 0.3, xMaxNormalized: 0.3 }),
    Code.InvalidArgument,
    /x_min_normalized.*less than x_max_normalized/,
  );
  await expectCode(add({ label: ' ' }), Code.InvalidArgument, /label/);
  await expectCode(add({ confidence: 2 }), Code.InvalidArgument, /confidence.*between 0 and 1/);
  await expectCode(add({ binaryDataId: foreignId }), Code.NotFound, /binary data/);

  await owner.data.updateBoundingBox({ binaryDataId: id, bboxId, label: 'crow' });
  await owner.data.updateBoundingBox({ binaryDataId: id, bboxId, xMaxNormalized: 0.9 });
  await expectCode(
    owner.data.updateBoundingBox({ binaryDataId: id, bboxId, xMinNormalized: 0.95 }),
    Code.InvalidArgument,
    /x_min_normalized/,
  );
  await expectCode(
    owner.data.updateBoundingBox({ binaryDataId: id, bboxId: 'nope', label: 'x' }),
    Code.NotFound,
    /bounding box/,
  );
  let [item] = (await owner.data.binaryDataByIDs({ binaryDataIds: [id] })).data;
  const box = item?.metadata?.annotations?.bboxes[0];
  assert.equal(box?.label, 'crow');
  assert.equal(box?.xMinNormalized, 0.1);
  assert.equal(box?.xMaxNormalized, 0.9);
  assert.equal(box?.confidence, 0.5);

  assert.deepEqual((await owner.data.boundingBoxLabelsByFilter({})).labels, ['cat', 'crow', 'dog']);
  assert.deepEqual((await owner.data.boundingBoxLabelsByFilter({ filter: { robotName: 'arm' } })).labels, [
    'crow',
    'dog',
  ]);
  assert.deepEqual((await stranger.data.boundingBoxLabelsByFilter({})).labels, []);
  await owner.data.removeBoundingBoxFromImageByID({ binaryDataId: id, bboxId });
  [item] = (await owner.data.binaryDataByIDs({ binaryDataIds: [id] })).data;
  assert.equal(item?.metadata?.annotations?.bboxes.length, 0);
  await expectCode(
    owner.data.removeBoundingBoxFromImageByID({ binaryDataId: id, bboxId }),
    Code.NotFound,
    /bounding box/,
  );
});

test('datasets: create, rename, list, membership, merge, delete', async () => {
  const { id: a } = await owner.dataset.createDataset({ name: 'cats', organizationId: org });
  const { id: b } = await owner.dataset.createDataset({ name: 'dogs', organizationId: org });
  await expectCode(
    owner.dataset.createDataset({ name: 'cats', organizationId: org }),
    Code.AlreadyExists,
    /name/,
  );
  await expectCode(
    owner.dataset.createDataset({ name: '', organizationId: org }),
    Code.InvalidArgument,
    /name/,
  );
  await expectCode(
    owner.dataset.createDataset({ name: 'x'.repeat(300), organizationId: org }),
    Code.InvalidArgument,
    /name.*256/,
  );
  await expectCode(
    owner.dataset.createDataset({ name: 'x', organizationId: otherOrg.organizationId }),
    Code.PermissionDenied,
    /organization/,
  );
  await owner.dataset.renameDataset({ id: b, name: 'dogs-2' });
  await expectCode(owner.dataset.renameDataset({ id: b, name: 'cats' }), Code.AlreadyExists, /name/);
  await expectCode(stranger.dataset.renameDataset({ id: b, name: 'mine' }), Code.NotFound, /dataset/);
  const listed = await owner.dataset.listDatasetsByOrganizationID({ organizationId: org });
  assert.deepEqual(
    listed.datasets.map((dataset) => dataset.name),
    ['cats', 'dogs-2'],
  );
  assert.ok(listed.datasets[0]?.timeCreated);
  assert.deepEqual((await stranger.dataset.listDatasetsByIDs({ ids: [a, b] })).datasets, []);
  assert.equal((await owner.dataset.listDatasetsByIDs({ ids: [a, 'unknown'] })).datasets.length, 1);

  await owner.data.addBinaryDataToDatasetByIDs({ datasetId: a, binaryDataIds: roverIds.slice(0, 3) });
  await owner.data.addBinaryDataToDatasetByIDs({ datasetId: a, binaryDataIds: roverIds.slice(0, 1) });
  await owner.data.addBinaryDataToDatasetByIDs({ datasetId: b, binaryDataIds: roverIds.slice(2, 5) });
  assert.equal(await count({ datasetId: a }), 3);
  assert.equal(await count({ datasetId: b }), 3);
  await owner.data.removeBinaryDataFromDatasetByIDs({ datasetId: a, binaryDataIds: [roverIds[0] as string] });
  assert.equal(await count({ datasetId: a }), 2);
  await expectCode(
    owner.data.addBinaryDataToDatasetByIDs({ datasetId: 'nope', binaryDataIds: roverIds.slice(0, 1) }),
    Code.NotFound,
    /dataset/,
  );
  await expectCode(
    stranger.data.addBinaryDataToDatasetByIDs({ datasetId: a, binaryDataIds: [foreignId] }),
    Code.NotFound,
    /dataset/,
  );
  // An owner of both organizations cannot put another organization's item into this dataset.
  const both = await createScopedKey(t.cloud, otherOrg.organizationId, {
    resourceType: 'organization',
    resourceId: otherOrg.organizationId,
  });
  await t.cloud.deps.db.query(
    `INSERT INTO authorizations (organization_id, identity_type, identity_id, role, resource_type, resource_id)
     VALUES ($1, 'api-key', $2, 'operator', 'organization', $3)`,
    [org, both.keyId, org],
  );
  const bothClients = await createAuthedClients(t.url, both);
  await expectCode(
    bothClients.data.addBinaryDataToDatasetByIDs({ datasetId: a, binaryDataIds: [foreignId] }),
    Code.InvalidArgument,
    /another organization/,
  );

  const { datasetId: merged } = await owner.dataset.mergeDatasets({
    datasetIds: [a, b],
    name: 'pets',
    organizationId: org,
  });
  assert.equal(await count({ datasetId: merged }), 4, 'union of 2 and 3 items sharing one');
  await expectCode(
    owner.dataset.mergeDatasets({ datasetIds: [], name: 'x', organizationId: org }),
    Code.InvalidArgument,
    /dataset_ids/,
  );
  await expectCode(
    owner.dataset.mergeDatasets({ datasetIds: [a, 'nope'], name: 'x', organizationId: org }),
    Code.NotFound,
    /nope/,
  );

  await owner.dataset.deleteDataset({ id: a });
  assert.equal(await count({ datasetId: a }), 0);
  const [item] = (await owner.data.binaryDataByIDs({ binaryDataIds: [roverIds[2] as string] })).data;
  assert.deepEqual(item?.metadata?.datasetIds, [b, merged]);
  await expectCode(owner.dataset.deleteDataset({ id: a }), Code.NotFound, /dataset/);
});

test('CreateBinaryDataSignedURL: default 15 minutes, 1..10080, foreign IDs not found', async () => {
  const id = armIds[1] as string;
  const response = await owner.data.createBinaryDataSignedURL({ binaryDataId: id });
  assert.equal(timestampMs(response.expiresAt as never), now.ms + 15 * minute);
  const download = await fetch(response.signedUrl);
  assert.equal(download.status, 200);
  const week = await owner.data.createBinaryDataSignedURL({ binaryDataId: id, expirationMinutes: 10080 });
  assert.equal(timestampMs(week.expiresAt as never), now.ms + 10080 * minute);
  await expectCode(
    owner.data.createBinaryDataSignedURL({ binaryDataId: id, expirationMinutes: 10081 }),
    Code.InvalidArgument,
    /expiration_minutes.*10080/,
  );
  await expectCode(
    owner.data.createBinaryDataSignedURL({ binaryDataId: id, expirationMinutes: 0 }),
    Code.InvalidArgument,
    /expiration_minutes/,
  );
  await expectCode(
    stranger.data.createBinaryDataSignedURL({ binaryDataId: id }),
    Code.NotFound,
    /binary data/,
  );
  await expectCode(
    owner.data.createBinaryDataSignedURL({ binaryDataId: '' }),
    Code.InvalidArgument,
    /binary_data_id/,
  );
});

test('scoping: machine credentials and location keys reach only their data', async () => {
  const machine = await createAuthedClients(t.url, { partId: arm.partId, secret: arm.partSecret });
  assert.equal(await count({}, machine), 6);
  assert.equal(
    (await machine.data.binaryDataByIDs({ binaryDataIds: [roverIds[0] as string] })).data.length,
    0,
  );
  const locationKey = await createAuthedClients(
    t.url,
    await createScopedKey(t.cloud, org, { resourceType: 'location', resourceId: rover.locationId }),
  );
  assert.equal(await count({}, locationKey), 14);
  const robotKey = await createAuthedClients(
    t.url,
    await createScopedKey(t.cloud, org, { resourceType: 'robot', resourceId: arm.robotId }),
  );
  assert.equal(await count({}, robotKey), 6);
});

test('uploads through DataSyncService are readable, and deletes remove rows and blobs', async () => {
  const uploadRequest = {
    metadata: {
      partId: rover.partId,
      componentType: 'rdk:component:camera',
      componentName: 'uploaded',
      methodName: 'ReadImage',
      type: dataSyncPb.DataType.BINARY_SENSOR,
      fileExtension: '.png',
      tags: ['up'],
    },
    sensorContents: [
      {
        metadata: {
          timeRequested: { seconds: BigInt(base / 1000) },
          timeReceived: { seconds: BigInt(base / 1000) },
        },
        data: { case: 'binary' as const, value: new Uint8Array([1, 2, 3]) },
      },
    ],
  };
  const upload = await owner.dataSync.dataCaptureUpload(uploadRequest);
  const [uploaded] = (
    await owner.data.binaryDataByIDs({ binaryDataIds: [upload.binaryDataId], includeBinary: true })
  ).data;
  assert.deepEqual([...(uploaded?.binary ?? [])], [1, 2, 3]);
  assert.equal(uploaded?.metadata?.captureMetadata?.componentName, 'uploaded');
  assert.equal(await count({ componentName: 'uploaded', tagsFilter: { tags: ['up'] } }), 1);

  const deleted = await owner.data.deleteBinaryDataByIDs({ binaryDataIds: [upload.binaryDataId, foreignId] });
  assert.equal(Number(deleted.deletedCount), 1);
  assert.equal(await t.cloud.deps.blobs.stat(upload.binaryDataId), undefined, 'blob removed');
  assert.equal(await count({}, stranger), 1, 'foreign item untouched');
  // The same capture uploaded again after the delete is stored again, not answered as a duplicate.
  const again = await owner.dataSync.dataCaptureUpload(uploadRequest);
  const [restored] = (
    await owner.data.binaryDataByIDs({ binaryDataIds: [again.binaryDataId], includeBinary: true })
  ).data;
  assert.deepEqual([...(restored?.binary ?? [])], [1, 2, 3]);
  await owner.data.deleteBinaryDataByIDs({ binaryDataIds: [again.binaryDataId] });
  await expectCode(
    owner.data.deleteBinaryDataByIDs({ binaryDataIds: [] }),
    Code.InvalidArgument,
    /binary_data_ids/,
  );

  const byFilterDeleted = await owner.data.deleteBinaryDataByFilter({
    filter: { mimeType: ['pointcloud/pcd'] },
    includeInternalData: true,
  });
  assert.equal(Number(byFilterDeleted.deletedCount), 2);
  assert.equal(await count({ mimeType: ['pointcloud/pcd'] }), 0);
  const internalKept = await owner.data.deleteBinaryDataByFilter({
    filter: { componentName: 'slam' },
    includeInternalData: false,
  });
  assert.equal(Number(internalKept.deletedCount), 0);
  const all = await owner.data.deleteBinaryDataByFilter({ includeInternalData: true });
  assert.equal(Number(all.deletedCount), 19);
  assert.equal(Number((await byFilter({}, { countOnly: true, internal: true })).count), 0);
  assert.equal(await count({}, stranger), 1);
  assert.ok(await t.cloud.deps.blobs.stat(foreignId));
});
