import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Code, createSdkClient, expectRpcError } from '@mcloud/sdk-testkit';
import type { ViamClient } from '@viamrobotics/sdk';
import pg from 'pg';
import {
  configureDatabaseUser,
  getDatabaseConnection,
} from '../../src/domain/data/database-users/database-users.ts';
import { withPipelineScheduler } from '../pipelines/pipeline-fixtures.ts';
import { ownerOf } from '../support/owner-principal.ts';
import { createOrganization, createPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { eventually } from './e2e-support.ts';

// A pipeline scheduled by the cloud's own loop and executed by its job queue (injected clock), then its
// sink read back through the real SDK: dataClient.tabularDataByMQL with the PIPELINE_SINK source, decoded
// by the SDK's BSON decoder; and through a BI database user with the pg client.

const hour = 3_600_000;
const base = Date.parse('2025-05-01T00:00:00Z');
let nowMs = base + 30 * 60_000;
const clock = { nowMs: () => nowMs };
let t: TestCloud;
let client: ViamClient;
let foreignClient: ViamClient;
let organizationId: string;
let foreign: Awaited<ReturnType<typeof createOrganization>>;
let pipelineId: string;
const sink = (id: string) => ({ type: 3, pipelineId: id }) as never; // TabularDataSource{PIPELINE_SINK}

const configure = withPipelineScheduler(50);

before(async () => {
  t = await startTestCloud({ clock, configure });
  organizationId = t.bootstrap.organization_id;
  const part = await createPart(
    t.cloud,
    { organizationId, locationId: t.bootstrap.location_id },
    { robotName: 'r' },
  );
  // Hour h (0..2): sensors a and b, temperatures 10h + 1 and 10h + 2.
  await seedReadings(
    t.cloud,
    part,
    { componentName: 'a' },
    [0, 1, 2].map((h) => ({ capturedAtMs: base + h * hour + 60_000, data: { readings: { t: 10 * h + 1 } } })),
  );
  await seedReadings(
    t.cloud,
    part,
    { componentName: 'b' },
    [0, 1, 2].map((h) => ({
      capturedAtMs: base + h * hour + 120_000,
      data: { readings: { t: 10 * h + 2 } },
    })),
  );
  const url = t.url;
  client = await createSdkClient({
    url,
    apiKeyId: t.bootstrap.api_key_id,
    apiKey: t.bootstrap.api_key,
    transport: 'grpc-web',
  });
  foreign = await createOrganization(t.cloud, 'foreign');
  foreignClient = await createSdkClient({
    url,
    apiKeyId: foreign.keyId,
    apiKey: foreign.key,
    transport: 'grpc-web',
  });
  pipelineId = await client.dataClient.createDataPipeline(
    organizationId,
    'hourly-by-sensor',
    [
      { $group: { _id: '$component_name', avg: { $avg: '$data.readings.t' }, n: { $sum: 1 } } },
      { $project: { _id: 0, sensor: '$_id', avg: 1, n: 1 } },
    ],
    '0 * * * *',
    false,
  );
  nowMs = base + 3 * hour + 1_000;
  await eventually(
    async () => {
      const page = await client.dataClient.listDataPipelineRuns(pipelineId);
      const statuses = page.runs.map((run: { status: number }) => run.status);
      assert.deepEqual(statuses, [3, 3, 3]); // COMPLETED
    },
    20_000,
    50,
  );
});

after(async () => {
  await t?.stop();
});

interface SinkDoc {
  _id: unknown;
  sensor: string;
  avg: number;
  n: number;
  _viam_pipeline_run: { id: string; interval: { start: Date; end: Date }; organization_id: string };
}

test('TabularDataByMQL over PIPELINE_SINK: the output documents with _viam_pipeline_run', async () => {
  const docs = (await client.dataClient.tabularDataByMQL(
    organizationId,
    [{ $sort: { '_viam_pipeline_run.interval.start': 1, sensor: 1 } }],
    false,
    sink(pipelineId),
  )) as unknown as SinkDoc[];
  assert.equal(docs.length, 6);
  assert.deepEqual(
    docs.map((doc) => [doc.sensor, doc.avg, doc.n]),
    [
      ['a', 1, 1],
      ['b', 2, 1],
      ['a', 11, 1],
      ['b', 12, 1],
      ['a', 21, 1],
      ['b', 22, 1],
    ],
  );
  const run = docs[2]?._viam_pipeline_run;
  assert.ok(run?.interval.start instanceof Date, 'interval dates decode as BSON dates');
  assert.equal(run?.interval.start.getTime(), base + hour);
  assert.equal(run?.interval.end.getTime(), base + 2 * hour);
  assert.equal(run?.organization_id, organizationId);
  assert.match(run?.id ?? '', /^[0-9a-f-]{36}$/);
  assert.ok(docs[0]?._id, 'each output document has an _id');
});

test('the sink answers further stages: $match on dates and fields, $group', async () => {
  const late = (await client.dataClient.tabularDataByMQL(
    organizationId,
    [
      { $match: { '_viam_pipeline_run.interval.start': { $gte: new Date(base + hour) }, sensor: 'b' } },
      { $project: { _id: 0, avg: 1 } },
      { $sort: { avg: -1 } },
    ],
    false,
    sink(pipelineId),
  )) as unknown as { avg: number }[];
  assert.deepEqual(late, [{ avg: 22 }, { avg: 12 }]);
  const totals = (await client.dataClient.tabularDataByMQL(
    organizationId,
    [{ $group: { _id: '$sensor', total: { $sum: '$avg' } } }, { $sort: { _id: 1 } }],
    false,
    sink(pipelineId),
  )) as unknown as { _id: string; total: number }[];
  assert.deepEqual(totals, [
    { _id: 'a', total: 33 },
    { _id: 'b', total: 36 },
  ]);
});

test('PIPELINE_SINK: missing or malformed pipeline_id → InvalidArgument; unknown or foreign → NotFound', async () => {
  const missing = await expectRpcError(
    client.dataClient.tabularDataByMQL(organizationId, [{ $limit: 1 }], false, sink('')),
    Code.InvalidArgument,
  );
  assert.match(missing.rawMessage, /data_source\.pipeline_id: is required/);
  const malformed = await expectRpcError(
    client.dataClient.tabularDataByMQL(organizationId, [{ $limit: 1 }], false, sink('nope')),
    Code.InvalidArgument,
  );
  assert.match(malformed.rawMessage, /data_source\.pipeline_id: must be a data pipeline ID/);
  const unknown = randomUUID();
  const notFound = await expectRpcError(
    client.dataClient.tabularDataByMQL(organizationId, [{ $limit: 1 }], false, sink(unknown)),
    Code.NotFound,
  );
  assert.match(notFound.rawMessage, new RegExp(`data pipeline "${unknown}" not found`));
  // Another organization names our pipeline under its own organization: not found, nothing leaks.
  await expectRpcError(
    foreignClient.dataClient.tabularDataByMQL(
      foreign.organizationId,
      [{ $limit: 1 }],
      false,
      sink(pipelineId),
    ),
    Code.NotFound,
  );
  await expectRpcError(
    foreignClient.dataClient.tabularDataByMQL(organizationId, [{ $limit: 1 }], false, sink(pipelineId)),
    Code.PermissionDenied,
  );
});

test("a BI database user sees its organization's sink documents, not another's", async () => {
  // Another organization's pipeline with output of its own.
  const foreignPipeline = randomUUID();
  const db = t.cloud.deps.db;
  await db.query(
    `INSERT INTO data_pipelines (id, organization_id, name, stages, schedule, enable_backfill, data_source_type,
       enabled, created_at, updated_at) VALUES ($1, $2, 'theirs', '{}', '0 * * * *', false, 'standard', false, now(), now())`,
    [foreignPipeline, foreign.organizationId],
  );
  await db.query(
    'INSERT INTO pipeline_sink (organization_id, pipeline_id, run_id, doc) VALUES ($1, $2, $3, $4)',
    [foreign.organizationId, foreignPipeline, randomUUID(), JSON.stringify({ secret: true })],
  );
  const deps = { db, clock, config: t.cloud.deps.config };
  await configureDatabaseUser(deps, ownerOf(organizationId), { organizationId, password: 'sink reader 1' });
  const { uri } = await getDatabaseConnection(deps, ownerOf(organizationId), { organizationId });
  const url = new URL(uri);
  url.password = 'sink reader 1';
  const bi = new pg.Client({ connectionString: url.toString() });
  await bi.connect();
  try {
    const rows = await bi.query<{ pipeline_id: string; organization_id: string; sensor: string }>(
      `SELECT pipeline_id, organization_id, doc ->> 'sensor' AS sensor FROM pipeline_sink ORDER BY sensor`,
    );
    assert.equal(rows.rows.length, 6);
    assert.ok(
      rows.rows.every((row) => row.pipeline_id === pipelineId && row.organization_id === organizationId),
    );
    const theirs = await bi.query(
      'SELECT count(*)::int AS n FROM sensordata.pipeline_sink WHERE pipeline_id = $1',
      [foreignPipeline],
    );
    assert.equal(theirs.rows[0].n, 0);
    await assert.rejects(bi.query('SELECT * FROM public.pipeline_sink'), /permission denied/);
    await assert.rejects(bi.query('DELETE FROM pipeline_sink'), /read-only|permission denied|cannot delete/);
  } finally {
    await bi.end();
  }
});
