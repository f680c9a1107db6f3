import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dataPb } from '@mcloud/protocol';
import { Code, expectRpcError } from '@mcloud/sdk-testkit';
import { serialize } from 'bson';
import { expireHotReadings } from '../../src/domain/data/hot-storage/hot-storage-source.ts';
import { createAuthedClients } from '../support/connect-clients.ts';
import {
  createOrganization,
  createPart,
  createScopedKey,
  type SeedPart,
  seedReadings,
} from '../support/seed-data.ts';
import { type SdkCloud, startSdkCloud } from './e2e-support.ts';

// HOT_STORAGE (the capture method's recent_data_store.stored_hours window) and custom indexes, through the
// real @viamrobotics/sdk dataClient and raw Connect clients, on the real embedded PostgreSQL.

const hour = 3_600_000;
const minute = 60_000;
const HOT = { type: 2 } as never; // TabularDataSource{type: HOT_STORAGE}

function hotConfig(component: string, storedHours: number) {
  return {
    components: [
      {
        name: component,
        api: 'rdk:component:sensor',
        model: 'fake',
        service_configs: [
          {
            type: 'data_manager',
            attributes: {
              capture_methods: [
                {
                  method: 'Readings',
                  capture_frequency_hz: 1,
                  recent_data_store: { stored_hours: storedHours },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}

async function setConfig(sdk: SdkCloud, part: SeedPart, config: unknown): Promise<void> {
  await sdk.testCloud.cloud.deps.db.query('UPDATE robot_parts SET config = $2 WHERE id = $1', [
    part.partId,
    JSON.stringify(config),
  ]);
}

describe('hot storage and custom indexes', () => {
  let sdk: SdkCloud;
  let part: SeedPart;
  let foreignOrg: string;
  let foreignPart: SeedPart;
  const now = Date.now();

  before(async () => {
    sdk = await startSdkCloud('grpc');
    const cloud = sdk.testCloud.cloud;
    part = await createPart(
      cloud,
      { organizationId: sdk.organizationId, locationId: sdk.locationId },
      { robotName: 'rover' },
    );
    await setConfig(sdk, part, hotConfig('thermo', 1));
    await seedReadings(cloud, part, { componentName: 'thermo' }, [
      { capturedAtMs: now - 3 * hour, data: { readings: { temperature: 1 } } },
      { capturedAtMs: now - 30 * minute, data: { readings: { temperature: 20 } } },
      { capturedAtMs: now - 10 * minute, data: { readings: { temperature: 22 } } },
    ]);
    await seedReadings(cloud, part, { componentName: 'cold' }, [
      { capturedAtMs: now - 5 * minute, data: { readings: { temperature: -4 } } },
    ]);
    const foreign = await createOrganization(cloud, 'foreign');
    foreignOrg = foreign.organizationId;
    foreignPart = await createPart(
      cloud,
      { organizationId: foreignOrg, locationId: foreign.locationId },
      { robotName: 'spy' },
    );
    await setConfig(sdk, foreignPart, hotConfig('thermo', 24));
    await seedReadings(cloud, foreignPart, { componentName: 'thermo' }, [
      { capturedAtMs: now - 5 * minute, data: { readings: { temperature: 22 } } },
    ]);
  });

  after(async () => {
    await sdk?.stop();
  });

  const hotQuery = (stages: Record<string, unknown>[], useRecentData = false) =>
    sdk.client.dataClient.tabularDataByMQL(
      sdk.organizationId,
      stages as never,
      useRecentData,
      useRecentData ? undefined : HOT,
    ) as Promise<Record<string, unknown>[]>;

  test('HOT_STORAGE returns only the configured sources within their window, never another organization', async () => {
    const stages = [
      { $project: { _id: 0, c: '$component_name', t: '$data.readings.temperature' } },
      { $sort: { t: 1 } },
    ];
    assert.deepEqual(await hotQuery(stages), [
      { c: 'thermo', t: 20 },
      { c: 'thermo', t: 22 },
    ]);
    // Deprecated use_recent_data = HOT_STORAGE.
    assert.equal((await hotQuery(stages, true)).length, 2);
    // STANDARD still has everything of the organization.
    const all = await sdk.client.dataClient.tabularDataByMQL(sdk.organizationId, [{ $count: 'n' }]);
    assert.deepEqual(all, [{ n: 4 }]);
  });

  test('uploads through the real ingest path (COPY, group commit) land in the hot store', async () => {
    await sdk.client.dataClient.tabularDataCaptureUpload(
      [{ readings: { temperature: 30 } }, { readings: { temperature: 31 } }],
      part.partId,
      'rdk:component:sensor',
      'thermo',
      'Readings',
      [
        [new Date(now - 2 * minute), new Date(now - 2 * minute)],
        [new Date(now - 100 * minute), new Date(now - 100 * minute)],
      ],
    );
    const rows = await hotQuery([
      { $match: { 'data.readings.temperature': { $gte: 30 } } },
      { $project: { _id: 0, t: '$data.readings.temperature' } },
    ]);
    assert.deepEqual(rows, [{ t: 30 }], 'the reading captured 100 minutes ago is outside the 1-hour window');
  });

  test('a config change applies to the next write; expired rows are invisible and reclaimed in batches', async () => {
    await setConfig(sdk, part, hotConfig('cold', 2));
    await seedReadings(sdk.testCloud.cloud, part, { componentName: 'cold' }, [
      { capturedAtMs: now - minute, data: { readings: { temperature: -5 } } },
    ]);
    await seedReadings(sdk.testCloud.cloud, part, { componentName: 'thermo' }, [
      { capturedAtMs: now - minute, data: { readings: { temperature: 99 } } },
    ]);
    const rows = await hotQuery([
      { $match: { component_name: 'cold' } },
      { $project: { _id: 0, t: '$data.readings.temperature' } },
    ]);
    assert.deepEqual(rows, [{ t: -5 }]);
    assert.equal((await hotQuery([{ $match: { 'data.readings.temperature': 99 } }])).length, 0);
    const db = sdk.testCloud.cloud.deps.db;
    const before = Number((await db.query('SELECT count(*) AS n FROM hot_readings')).rows[0].n);
    const removed = await expireHotReadings(db, now + 3 * hour, AbortSignal.timeout(10_000), 2);
    assert.equal(removed, before - 1, 'all but the foreign reading kept for 24 hours are past their window');
    assert.equal(Number((await db.query('SELECT count(*) AS n FROM hot_readings')).rows[0].n), 1);
  });

  const HOT_STORE = 1 as never;
  const spec = (keys: Record<string, unknown>, options?: Record<string, unknown>) =>
    ({ keys, ...(options ? { options } : {}) }) as never;

  test('CreateIndex from the SDK builds a partial expression index the planner uses; ListIndexes returns JSON text', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    // Enough hot rows that a sequential scan loses.
    await seedReadings(
      sdk.testCloud.cloud,
      part,
      { componentName: 'cold' },
      Array.from({ length: 20_000 }, (_, i) => ({
        capturedAtMs: now - minute + i,
        data: { readings: { temperature: i % 1000, seq: i } },
      })),
    );
    await sdk.client.dataClient.createIndex(
      sdk.organizationId,
      HOT_STORE,
      spec(
        { 'data.readings.seq': -1 },
        { name: 'by_seq', partialFilterExpression: { 'data.readings.seq': { $exists: true } } },
      ),
    );
    const listed = await sdk.client.dataClient.listIndexes(sdk.organizationId, HOT_STORE);
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.indexName, 'by_seq');
    assert.equal(listed[0]?.createdBy, dataPb.IndexCreator.CUSTOMER);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(listed[0]?.indexSpec[0])), {
      key: { 'data.readings.seq': -1 },
      options: { name: 'by_seq', partialFilterExpression: { 'data.readings.seq': { $exists: true } } },
    });
    const pgIndex = await db.query(
      "SELECT indexdef FROM pg_indexes WHERE tablename = 'hot_readings' AND indexname LIKE 'cix_%'",
    );
    assert.equal(pgIndex.rowCount, 1);
    assert.match(
      pgIndex.rows[0].indexdef,
      new RegExp(`WHERE \\(\\(organization_id = '${sdk.organizationId}'::uuid\\)`),
    );
    await db.query('ANALYZE hot_readings');
    // The plan as the query role sees it (same path as TabularDataBySQL/MQL: token + SET ROLE, read only).
    const client = await db.connect();
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(
        "SELECT set_config('mcloud.query_token', mcloud_private.organization_token($1), true)",
        [sdk.organizationId],
      );
      await client.query('SET LOCAL ROLE mcloud_query');
      const sql = `SELECT data FROM sensordata.hot_readings
        WHERE organization_uuid = '${sdk.organizationId}' AND sensordata.doc_key(data, '{readings,seq}') = '12345'`;
      const plan = (await client.query(`EXPLAIN ${sql}`)).rows.map((row) => row['QUERY PLAN']).join('\n');
      assert.match(plan, /Index Scan (using|on) cix_[0-9a-f]+/, plan);
      const found = await client.query(sql);
      assert.deepEqual(found.rows, [{ data: { readings: { temperature: 345, seq: 12345 } } }]);
      // The foreign organization's token sees none of it, even naming our organization.
      await client.query('ROLLBACK');
      await client.query('BEGIN READ ONLY');
      await client.query(
        "SELECT set_config('mcloud.query_token', mcloud_private.organization_token($1), true)",
        [foreignOrg],
      );
      await client.query('SET LOCAL ROLE mcloud_query');
      assert.equal((await client.query(sql)).rowCount, 0);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  test(
    'Python (raw BSON key document) and CLI (JSON bytes) encodings; unique within the organization',
    { todo: 'answers Internal: not yet diagnosed' },
    async () => {
      const { bootstrap, url } = sdk.testCloud;
      const { data } = await createAuthedClients(url, {
        keyId: bootstrap.api_key_id,
        key: bootstrap.api_key,
      });
      await data.createIndex({
        organizationId: sdk.organizationId,
        collectionType: dataPb.IndexableCollection.HOT_STORE,
        indexSpec: [serialize({ 'data.readings.temperature': 1, time_received: -1 })],
      });
      const encoder = new TextEncoder();
      await data.createIndex({
        organizationId: sdk.organizationId,
        collectionType: dataPb.IndexableCollection.HOT_STORE,
        indexSpec: [
          encoder.encode('{"data.readings.seq": 1}'),
          encoder.encode('{"name": "seq_unique", "unique": true}'),
        ],
      });
      const names = (await sdk.client.dataClient.listIndexes(sdk.organizationId, HOT_STORE)).map(
        (index: { indexName: string }) => index.indexName,
      );
      assert.deepEqual(names.sort(), [
        'by_seq',
        'data.readings.temperature_1_time_received_-1',
        'seq_unique',
      ]);
      // Duplicate temperatures exist: a unique index on them cannot be built, and nothing is left behind.
      const dup = await expectRpcError(
        sdk.client.dataClient.createIndex(
          sdk.organizationId,
          HOT_STORE,
          spec({ 'data.readings.temperature': 1 }, { name: 'u', unique: true }),
        ),
        Code.FailedPrecondition,
      );
      assert.match(dup.rawMessage, /duplicate values/);
      await expectRpcError(
        sdk.client.dataClient.createIndex(
          sdk.organizationId,
          HOT_STORE,
          spec({ 'data.x': 1 }, { name: 'seq_unique' }),
        ),
        Code.AlreadyExists,
      );
      // The other organization's rows do not count for our unique index, and its index list is its own.
      assert.deepEqual(
        await sdk.client.dataClient
          .listIndexes(foreignOrg, HOT_STORE)
          .catch((e: { code: unknown }) => e.code),
        Code.PermissionDenied,
      );
      const count = await sdk.testCloud.cloud.deps.db.query(
        "SELECT count(*) AS n FROM pg_indexes WHERE tablename = 'hot_readings' AND indexname LIKE 'cix_%'",
      );
      assert.equal(Number(count.rows[0].n), 3);
    },
  );

  test(
    'bad specs answer InvalidArgument naming the field; DeleteIndex drops the index',
    { todo: 'index count depends on the previous test' },
    async () => {
      const cases: [Record<string, unknown>, Record<string, unknown> | undefined, RegExp][] = [
        [{ component_name: 1 }, undefined, /index_spec\.keys\.component_name: only time_requested/],
        [{ 'data.a': 'text' }, undefined, /index_spec\.keys\.data\.a: must be 1 or -1/],
        [{}, undefined, /index_spec\.keys: must be a non-empty document/],
        [{ 'data.a': 1 }, { sparse: true }, /index_spec\.options\.sparse: is not supported/],
        [
          { 'data.a': 1 },
          { partialFilterExpression: { $or: [] } },
          /partialFilterExpression\.\$or: only \$and/,
        ],
        [
          { 'data.a': 1 },
          { partialFilterExpression: { 'data.a': { $regex: 'x' } } },
          /partialFilterExpression\.data\.a\.\$regex: cannot be expressed/,
        ],
        [{ 'data.a': 1 }, { name: 'bad name!' }, /index_spec\.options\.name: must be/],
      ];
      for (const [keys, options, message] of cases) {
        const error = await expectRpcError(
          sdk.client.dataClient.createIndex(sdk.organizationId, HOT_STORE, spec(keys, options)),
          Code.InvalidArgument,
        );
        assert.match(error.rawMessage, message);
      }
      await expectRpcError(
        sdk.client.dataClient.listIndexes(sdk.organizationId, 0 as never),
        Code.InvalidArgument,
      );
      await expectRpcError(
        sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, 'nope'),
        Code.NotFound,
      );
      await sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, 'by_seq');
      const names = (await sdk.client.dataClient.listIndexes(sdk.organizationId, HOT_STORE)).map(
        (index: { indexName: string }) => index.indexName,
      );
      assert.equal(names.includes('by_seq'), false);
      const count = await sdk.testCloud.cloud.deps.db.query(
        "SELECT count(*) AS n FROM pg_indexes WHERE tablename = 'hot_readings' AND indexname LIKE 'cix_%'",
      );
      assert.equal(Number(count.rows[0].n), 2);
    },
  );
});
