import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { dataSyncPb } from '@mcloud/protocol';
import { dataSyncServiceWithRawUpload } from '../../src/api/data-sync/raw-data-capture-upload.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  apiKeyClient,
  createSecondOrganization,
  createTestPart,
  type DataSyncClient,
  dataSyncClient,
  stringWrapperParameter,
  type TestPart,
  tokenFor,
  ts,
  uploadMetadata,
  valueParameter,
} from './ingest-fixtures.ts';

let t: TestCloud;
let client: DataSyncClient;
let part: TestPart;

before(async () => {
  t = await startTestCloud();
  client = await apiKeyClient(t);
  part = await createTestPart(t, t.bootstrap.organization_id, t.bootstrap.location_id);
});
after(async () => {
  await t?.stop();
});

async function expectCode(promise: Promise<unknown>, code: Code, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConnectError, `expected ConnectError, got ${String(error)}`);
    assert.equal(error.code, code, `code of: ${error.message}`);
    assert.match(error.rawMessage, pattern);
    return true;
  });
}

function reading(ms: number, value: number, extra: Record<string, unknown> = {}) {
  return {
    metadata: { timeRequested: ts(ms), timeReceived: ts(ms + 5) },
    data: {
      case: 'struct' as const,
      value: { readings: { temperature: value, ok: true, list: [1, 'a', null], ...extra } },
    },
  };
}

test('tabular upload stores every reading as jsonb with its capture source and month partitions', async () => {
  const march = Date.UTC(2025, 2, 31, 23, 59, 0);
  const april = Date.UTC(2025, 3, 1, 0, 0, 1);
  const contents = Array.from({ length: 300 }, (_, i) => reading(i < 150 ? march + i : april + i, i));
  const response = await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, {
      tags: ['a', 'b'],
      methodParameters: {
        pin_name: valueParameter('gpio7'),
        legacy: stringWrapperParameter('old'),
        rate: valueParameter(2),
      },
    }),
    sensorContents: contents,
  });
  assert.match(response.fileId, /^[0-9a-f]{24}$/);
  assert.equal(response.binaryDataId, `${part.organizationId}/${part.locationId}/${response.fileId}`);

  const db = t.cloud.deps.db;
  const rows = await db.query(
    `SELECT r.data, r.time_requested, r.time_received, r.captured_at, r.size_bytes, s.*
     FROM readings r JOIN capture_sources s ON s.id = r.source_id WHERE r.organization_id = $1 ORDER BY r.id`,
    [part.organizationId],
  );
  assert.equal(rows.rowCount, 300);
  const first = rows.rows[0];
  assert.deepEqual(first.data, { readings: { temperature: 0, ok: true, list: [1, 'a', null] } });
  assert.equal(first.time_requested.getTime(), march);
  assert.equal(first.time_received.getTime(), march + 5);
  assert.equal(first.captured_at.getTime(), march);
  assert.equal(first.size_bytes, JSON.stringify(first.data).length);
  assert.equal(first.part_id, part.partId);
  assert.equal(first.robot_id, part.robotId);
  assert.equal(first.location_id, part.locationId);
  assert.equal(first.component_type, 'rdk:component:sensor');
  assert.equal(first.component_name, 'my-sensor');
  assert.equal(first.method_name, 'Readings');
  assert.deepEqual(first.tags, ['a', 'b']);
  assert.deepEqual(first.method_parameters, { pin_name: 'gpio7', legacy: 'old', rate: 2 });
  assert.deepEqual(rows.rows[299].data.readings.temperature, 299);

  const partitions = await db.query(
    `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'readings'::regclass ORDER BY 1`,
  );
  const names = partitions.rows.map((row) => row.relname);
  assert.ok(names.includes('readings_y2025m03') && names.includes('readings_y2025m04'), names.join(','));
  const perPartition = await db.query('SELECT count(*)::int AS n FROM readings_y2025m03');
  assert.equal(perPartition.rows[0].n, 150);

  // The same metadata in a second upload reuses the capture source.
  await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, {
      tags: ['a', 'b'],
      methodParameters: {
        rate: valueParameter(2),
        legacy: stringWrapperParameter('old'),
        pin_name: valueParameter('gpio7'),
      },
    }),
    sensorContents: [reading(april + 10_000, 1)],
  });
  const sources = await db.query('SELECT count(*)::int AS n FROM capture_sources WHERE part_id = $1', [
    part.partId,
  ]);
  assert.equal(sources.rows[0].n, 1);
});

test('a retried tabular upload stores once and returns the same IDs, also when retries race', async () => {
  const request = {
    metadata: uploadMetadata(part.partId, { componentName: 'retry-sensor' }),
    sensorContents: [reading(Date.UTC(2025, 4, 1), 1), reading(Date.UTC(2025, 4, 2), 2)],
  };
  const first = await client.dataCaptureUpload(request);
  const again = await client.dataCaptureUpload(request);
  assert.equal(again.fileId, first.fileId);
  assert.equal(again.binaryDataId, first.binaryDataId);
  const racing = await Promise.all(
    Array.from({ length: 6 }, () =>
      client.dataCaptureUpload({
        metadata: uploadMetadata(part.partId, { componentName: 'race-sensor' }),
        sensorContents: [reading(Date.UTC(2025, 4, 3), 3)],
      }),
    ),
  );
  assert.equal(
    new Set(racing.map((response: dataSyncPb.DataCaptureUploadResponse) => response.fileId)).size,
    1,
  );
  const counts = await t.cloud.deps.db.query(
    `SELECT s.component_name, count(*)::int AS n FROM readings r JOIN capture_sources s ON s.id = r.source_id
     WHERE s.component_name IN ('retry-sensor', 'race-sensor') GROUP BY 1 ORDER BY 1`,
  );
  assert.deepEqual(
    counts.rows.map((row) => [row.component_name, row.n]),
    [
      ['race-sensor', 1],
      ['retry-sensor', 2],
    ],
  );
  // Different content is a different upload.
  const other = await client.dataCaptureUpload({
    ...request,
    sensorContents: [reading(Date.UTC(2025, 4, 1), 99)],
  });
  assert.notEqual(other.fileId, first.fileId);
});

test('a reading over 4 MiB is rejected naming its index and the limit, and nothing is stored', async () => {
  const big = 'x'.repeat(4 * 1024 * 1024);
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, { componentName: 'big-sensor' }),
      sensorContents: [reading(Date.UTC(2025, 5, 1), 1), reading(Date.UTC(2025, 5, 1), 2, { blob: big })],
    }),
    Code.InvalidArgument,
    /sensor_contents\[1\].*4194304/,
  );
  const stored = await t.cloud.deps.db.query(
    `SELECT count(*)::int AS n FROM readings r JOIN capture_sources s ON s.id = r.source_id WHERE s.component_name = 'big-sensor'`,
  );
  assert.equal(stored.rows[0].n, 0);
});

test('tabular uploads with binary contents or NUL characters are invalid', async () => {
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId),
      sensorContents: [{ metadata: {}, data: { case: 'binary', value: new Uint8Array([1, 2, 3]) } }],
    }),
    Code.InvalidArgument,
    /sensor_contents\[0\].*struct/,
  );
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId),
      sensorContents: [reading(Date.UTC(2025, 5, 1), 1, { bad: 'a\u0000b' })],
    }),
    Code.InvalidArgument,
    /NUL/,
  );
  await expectCode(
    client.dataCaptureUpload({ metadata: uploadMetadata(part.partId), sensorContents: [] }),
    Code.InvalidArgument,
    /sensor_contents/,
  );
});

test('unknown, malformed and foreign parts are rejected naming part_id', async () => {
  const unknown = '00000000-0000-4000-8000-000000000000';
  await expectCode(
    client.dataCaptureUpload({ metadata: uploadMetadata(unknown), sensorContents: [reading(Date.now(), 1)] }),
    Code.NotFound,
    /part_id.*not found/,
  );
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata('not-a-part'),
      sensorContents: [reading(Date.now(), 1)],
    }),
    Code.InvalidArgument,
    /part_id/,
  );
  const other = await createSecondOrganization(t);
  const foreignPart = await createTestPart(t, other.organizationId, other.locationId);
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(foreignPart.partId),
      sensorContents: [reading(Date.now(), 1)],
    }),
    Code.NotFound,
    new RegExp(`part_id.*${foreignPart.partId}.*not found`),
  );
  // The other organization's own key may upload to it.
  const otherClient = dataSyncClient(
    t.url,
    await tokenFor(t.url, { type: 'api-key', entity: other.apiKeyId, payload: other.apiKey }),
  );
  const ok = await otherClient.dataCaptureUpload({
    metadata: uploadMetadata(foreignPart.partId),
    sensorContents: [reading(Date.now(), 1)],
  });
  assert.ok(ok.binaryDataId.startsWith(`${other.organizationId}/`));
});

test('machine credentials upload for their own part only', async () => {
  const sibling = await createTestPart(t, t.bootstrap.organization_id, t.bootstrap.location_id);
  const machine = dataSyncClient(
    t.url,
    await tokenFor(t.url, { type: 'robot-secret', entity: part.partId, payload: part.secret }),
  );
  const ok = await machine.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, { componentName: 'machine-sensor' }),
    sensorContents: [reading(Date.now(), 7)],
  });
  assert.match(ok.fileId, /^[0-9a-f]{24}$/);
  await expectCode(
    machine.dataCaptureUpload({
      metadata: uploadMetadata(sibling.partId),
      sensorContents: [reading(Date.now(), 7)],
    }),
    Code.NotFound,
    /part_id/,
  );
});

test('timestamps before 1970 or far in the future are rejected', async () => {
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId),
      sensorContents: [
        { ...reading(0, 1), metadata: { timeRequested: ts(Date.now() + 5 * 365 * 86400_000) } },
      ],
    }),
    Code.InvalidArgument,
    /sensor_contents\[0\]\.metadata\.time_requested/,
  );
  assert.equal(dataSyncPb.DataType.TABULAR_SENSOR, 2);
});

test('malformed SensorData or metadata bytes are InvalidArgument naming the entry, and store nothing', async () => {
  const token = await tokenFor(t.url, {
    type: 'api-key',
    entity: t.bootstrap.api_key_id,
    payload: t.bootstrap.api_key,
  });
  // The raw view of the request (wire-identical) lets a test send bytes no SDK would produce.
  const raw = createClient(
    dataSyncServiceWithRawUpload,
    createGrpcTransport({
      baseUrl: t.url,
      interceptors: [
        (next) => (req) => {
          req.header.set('authorization', `Bearer ${token}`);
          return next(req);
        },
      ],
    }),
  );
  const metadata = toBinary(
    dataSyncPb.UploadMetadataSchema,
    create(dataSyncPb.UploadMetadataSchema, uploadMetadata(part.partId)),
  );
  const good = toBinary(
    dataSyncPb.SensorDataSchema,
    create(dataSyncPb.SensorDataSchema, reading(Date.UTC(2025, 5, 1), 1)),
  );
  await expectCode(
    raw.dataCaptureUpload({ metadata, sensorContents: [good, Uint8Array.of(0x12, 0x05, 0x0a)] }),
    Code.InvalidArgument,
    /sensor_contents\[1\].*SensorData/,
  );
  await expectCode(
    raw.dataCaptureUpload({ metadata: Uint8Array.of(0x0a, 0x09), sensorContents: [good] }),
    Code.InvalidArgument,
    /metadata.*UploadMetadata/,
  );
  await expectCode(
    raw.dataCaptureUpload({ sensorContents: [good] }),
    Code.InvalidArgument,
    /metadata.*required/,
  );
  const stored = await t.cloud.deps.db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM readings r JOIN capture_sources s ON s.id = r.source_id
      WHERE s.part_id = $1 AND r.captured_at = $2`,
    [part.partId, new Date(Date.UTC(2025, 5, 1))],
  );
  assert.equal(stored.rows[0]?.n, '0');
});

test('concurrent uploads share transactions; a bad one fails alone and identical ones store once', async () => {
  const day = Date.UTC(2025, 6, 14);
  const uploads = Array.from({ length: 40 }, (_, i) =>
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, { componentName: 'group-commit' }),
      sensorContents: Array.from({ length: 50 }, (_, j) =>
        reading(day + i * 1000 + j, i, i === 17 ? { bad: 'a\u0000b' } : {}),
      ),
    }),
  );
  // Two identical uploads race inside the same burst.
  const twin = () =>
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, { componentName: 'group-commit' }),
      sensorContents: [reading(day + 999_999, 1)],
    });
  const results = await Promise.allSettled([...uploads, twin(), twin()]);
  const failed = results.flatMap((result, index) => (result.status === 'rejected' ? [index] : []));
  assert.deepEqual(failed, [17]);
  const [first, second] = results
    .slice(40)
    .map((r) => (r.status === 'fulfilled' ? r.value.binaryDataId : ''));
  assert.ok(first);
  assert.equal(first, second);
  const stored = await t.cloud.deps.db.query<{ readings: string; transactions: string }>(
    `SELECT count(*)::text AS readings, count(DISTINCT r.xmin::text)::text AS transactions
       FROM readings r JOIN capture_sources s ON s.id = r.source_id
      WHERE s.part_id = $1 AND s.component_name = 'group-commit'`,
    [part.partId],
  );
  assert.equal(stored.rows[0]?.readings, String(39 * 50 + 1));
  // Rows committed together share a transaction ID: fewer transactions than uploads proves grouping.
  assert.ok(Number(stored.rows[0]?.transactions) < 40, `transactions: ${stored.rows[0]?.transactions}`);
});
