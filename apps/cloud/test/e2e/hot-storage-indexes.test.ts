import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dataPb } from '@mcloud/protocol';
import { Code, expectRpcError } from '@mcloud/sdk-testkit';
import { serialize } from 'bson';
import { expireHotReadings, hotStorageSource } from '../../src/domain/data/hot-storage/hot-storage-source.ts';
import { indexKeysOf, withIndexHint } from '../../src/domain/data/indexes/index-match.ts';
import { compilePipeline } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import { createAuthedClients } from '../support/connect-clients.ts';
import { createOrganization, createPart, type SeedPart, seedReadings } from '../support/seed-data.ts';
import { eventually, type SdkCloud, startSdkCloud } from './e2e-support.ts';
import { hotStorageConfig } from './hot-storage-fixtures.ts';
import { asQueryRole, customPgIndexes, explainAs, indexScans } from './index-test-support.ts';

// HOT_STORAGE (the capture method's recent_data_store.stored_hours window) and custom indexes, through the
// real @viamrobotics/sdk dataClient and raw Connect clients, on the real embedded PostgreSQL.

const hour = 3_600_000;
const minute = 60_000;
const HOT = { type: 2 } as never; // TabularDataSource{type: HOT_STORAGE}

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
    await setConfig(sdk, part, hotStorageConfig({ thermo: 1 }));
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
    await setConfig(sdk, foreignPart, hotStorageConfig({ thermo: 24 }));
    await seedReadings(cloud, foreignPart, { componentName: 'thermo' }, [
      { capturedAtMs: now - 5 * minute, data: { readings: { temperature: 22 } } },
    ]);
  });

  after(async () => {
    await sdk?.stop();
  });

  const hotCopySkips = async (organizationId: string) =>
    (
      await sdk.testCloud.cloud.deps.db.query(
        `SELECT reason, index_name, path, skipped_count::int AS skipped_count FROM hot_copy_skips
          WHERE organization_id = $1 ORDER BY reason, index_name, path`,
        [organizationId],
      )
    ).rows;

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
    await setConfig(sdk, part, hotStorageConfig({ cold: 2 }));
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
  const indexNames = async (): Promise<string[]> =>
    (await sdk.client.dataClient.listIndexes(sdk.organizationId, HOT_STORE))
      .map((index: { indexName: string }) => index.indexName)
      .sort();

  test('CreateIndex from the SDK builds a partial expression index; HOT_STORAGE MQL $match uses it', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    // Enough hot rows that a sequential scan loses; one document reaches its value through an array.
    await seedReadings(sdk.testCloud.cloud, part, { componentName: 'cold' }, [
      ...Array.from({ length: 20_000 }, (_, i) => ({
        capturedAtMs: now - minute + i,
        data: { readings: { temperature: i % 1000, seq: i } },
      })),
      { capturedAtMs: now - minute, data: { readings: { temperature: 0, seq: [7, 12345.0] } } },
      { capturedAtMs: now - minute, data: { readings: [{ seq: 12345 }] } },
      ...[-5.5, '12345', true, 1e21, { x: 1 }, null, 0.1].map((seq) => ({
        capturedAtMs: now - minute,
        data: { readings: { seq } },
      })),
    ]);
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
    const [pgIndex, ...others] = await customPgIndexes(db, 'hot_readings');
    assert.equal(others.length, 0);
    assert.ok(pgIndex?.valid);
    assert.match(
      pgIndex?.definition ?? '',
      new RegExp(`WHERE \\(\\(organization_id = '${sdk.organizationId}'::uuid\\) AND`),
    );
    await db.query('ANALYZE hot_readings');

    // The statement TabularDataByMQL compiles for HOT_STORAGE, planned as the query role runs it.
    for (const match of [
      { 'data.readings.seq': 12345 },
      { 'data.readings.seq': { $in: [12345, 99999] } },
      { 'data.readings.seq': { $gte: 12345, $lt: 12345.5 } },
      { $and: [{ 'data.readings.seq': { $gt: 12344.5 } }, { 'data.readings.seq': { $lte: 12345 } }] },
    ]) {
      const stages = [{ $match: match }, { $project: { _id: 0, seq: '$data.readings.seq' } }];
      const decoded = stages.map((stage, index) => decodeStage(serialize(stage), index));
      const keys = await indexKeysOf(db, sdk.organizationId, { type: 'hot-storage' });
      const { sql } = compilePipeline(
        decoded,
        withIndexHint(hotStorageSource(sdk.organizationId), decoded, keys),
      );
      const plan = await explainAs(db, sdk.organizationId, sql);
      assert.match(plan, new RegExp(`Index Scan (using|on) ${pgIndex?.name}`), plan);
      // Same answer as MongoDB semantics: the plain value, the array element, the value below an array.
      const before = await indexScans(db, pgIndex?.name as string);
      const rows = await hotQuery(stages);
      assert.deepEqual(rows.map((row) => JSON.stringify(row.seq)).sort(), ['12345', '[12345]', '[7,12345]']);
      // An idle backend flushes its statistics within 10 s (PGSTAT_IDLE_INTERVAL).
      await eventually(
        async () => assert.ok((await indexScans(db, pgIndex?.name as string)) > before),
        15_000,
      );
    }
    // Another organization's query role sees none of it, even naming our organization's rows.
    const sql = `SELECT data FROM sensordata.hot_readings WHERE organization_uuid = '${sdk.organizationId}'
      AND sensordata.doc_index_key(data, '{readings,seq}') = '12345'`;
    assert.equal((await asQueryRole(db, foreignOrg, (query) => query(sql))).length, 0);
  });

  test('index conditions change no result: MQL with and without them, over mixed types and arrays', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    const keys = await indexKeysOf(db, sdk.organizationId, { type: 'hot-storage' });
    assert.ok(keys);
    const path = 'data.readings.seq';
    const conditions: unknown[] = [
      0,
      7,
      12345,
      -5.5,
      0.1,
      1e21,
      '12345',
      true,
      19999,
      20000,
      { $eq: 12345 },
      { $in: [0, 7, '12345', true, -5.5] },
      { $gt: 19990 },
      { $gte: 19990 },
      { $lt: 0.5 },
      { $lte: -5.5 },
      { $gt: -6, $lt: 0.2 },
      { $gte: 1e20 },
      { $lt: -1e300 },
      { $gt: 5, $lt: 3 },
      { $gte: 7, $lte: 7 },
      { $gt: 12344, $exists: true },
      { $gt: 12344, $ne: 12345 },
    ];
    for (const condition of conditions) {
      const stages = [{ $match: { [path]: condition } }, { $project: { _id: 1 } }];
      const decoded = stages.map((stage, index) => decodeStage(serialize(stage), index));
      const plain: string = compilePipeline(decoded, hotStorageSource(sdk.organizationId)).sql;
      const hinted: string = compilePipeline(
        decoded,
        withIndexHint(hotStorageSource(sdk.organizationId), decoded, keys),
      ).sql;
      assert.notEqual(plain, hinted, JSON.stringify(condition));
      const [a, b] = await asQueryRole(
        db,
        sdk.organizationId,
        async (query): Promise<string[][]> => [
          (await query(plain)).map((row) => JSON.stringify(row)).sort(),
          (await query(hinted)).map((row) => JSON.stringify(row)).sort(),
        ],
      );
      assert.deepEqual(b, a, `same documents for ${JSON.stringify(condition)}`);
    }
    // Number keys order like the numbers (text order of the keys, as a C-collation btree sees it).
    const numbers = [
      '-1e400',
      '-1e308',
      '-1.5e300',
      '-20000',
      '-5.5',
      '-1e-320',
      '0',
      '1e-320',
      '1e-300',
      '0.1',
      '7',
      '12345',
      '12345.0000000000000000001',
      '12345.5',
      '9007199254740993',
      '1e21',
      '1.7e308',
      '1e400',
    ];
    const result = await db.query<{ key: string }>(
      `SELECT sensordata.doc_index_key(to_jsonb(x), '{}') AS key FROM unnest($1::numeric[]) WITH ORDINALITY AS u(x, i) ORDER BY i`,
      [numbers],
    );
    const keysInOrder = result.rows.map((row) => row.key);
    for (let i = 1; i < keysInOrder.length; i++) {
      assert.ok(
        (keysInOrder[i - 1] as string) <= (keysInOrder[i] as string),
        `${numbers[i - 1]} <= ${numbers[i]}`,
      );
    }
    assert.ok(keysInOrder.every((key) => /^n[0-9a-f]{16}$/.test(key)));
  });

  test('Python (BSON key document) and CLI (JSON bytes) encodings through the wire; unique within the organization', async () => {
    const { bootstrap, url } = sdk.testCloud;
    const { data } = await createAuthedClients(url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key });
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
        encoder.encode('{"data.readings.uid": 1}'),
        encoder.encode('{"name": "uid_unique", "unique": true}'),
      ],
    });
    assert.deepEqual(await indexNames(), [
      'by_seq',
      'data.readings.temperature_1_time_received_-1',
      'uid_unique',
    ]);
    // The CLI prints ListIndexes' bytes as text: JSON.
    const listed = await data.listIndexes({
      organizationId: sdk.organizationId,
      collectionType: dataPb.IndexableCollection.HOT_STORE,
    });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(listed.indexes[2]?.indexSpec[0])), {
      key: { 'data.readings.uid': 1 },
      options: { name: 'uid_unique', unique: true },
    });
    // Duplicate temperatures exist: a unique index on them cannot be built, and nothing is left behind.
    const dup = await expectRpcError(
      sdk.client.dataClient.createIndex(
        sdk.organizationId,
        HOT_STORE,
        spec({ 'data.readings.temperature': 1 }, { name: 'u', unique: true }),
      ),
      Code.FailedPrecondition,
    );
    assert.match(dup.rawMessage, /index_spec\.options\.unique: .*duplicate values.*"u"/);
    const db = sdk.testCloud.cloud.deps.db;
    const pgIndexes = await customPgIndexes(db, 'hot_readings');
    assert.equal(pgIndexes.length, 3);
    assert.ok(pgIndexes.every((index) => index.valid));
    // The unique index holds within the organization: a duplicate uid is not copied to the hot store (the
    // upload itself succeeds), nor is a document with an array there (MongoDB would check each element;
    // migration 0032), and the other organization's equal uid is its own business.
    await seedReadings(sdk.testCloud.cloud, part, { componentName: 'cold' }, [
      { capturedAtMs: now - minute, data: { readings: { uid: 'a' } } },
      { capturedAtMs: now - minute, data: { readings: { uid: 'a' } } },
      { capturedAtMs: now - minute, data: { readings: { uid: ['a'] } } },
      { capturedAtMs: now - minute, data: { readings: { uid: ['a'] } } },
    ]);
    await setConfig(sdk, foreignPart, hotStorageConfig({ cold: 24 }));
    await seedReadings(sdk.testCloud.cloud, foreignPart, { componentName: 'cold' }, [
      { capturedAtMs: now - minute, data: { readings: { uid: 'a' } } },
    ]);
    const uids = await hotQuery([
      { $match: { 'data.readings.uid': { $exists: true } } },
      { $project: { _id: 0, uid: '$data.readings.uid' } },
    ]);
    assert.deepEqual(uids.map((row) => JSON.stringify(row.uid)).sort(), ['"a"']);
    const standard = await sdk.client.dataClient.tabularDataByMQL(sdk.organizationId, [
      { $match: { 'data.readings.uid': 'a' } },
      { $count: 'n' },
    ]);
    assert.deepEqual(standard, [{ n: 4 }], 'every reading is stored; only the hot copy is left out');
    // The skipped copies are recorded, with the reason.
    assert.deepEqual(await hotCopySkips(sdk.organizationId), [
      {
        reason: 'array_at_unique_key',
        index_name: 'uid_unique',
        path: 'data.readings.uid',
        skipped_count: 2,
      },
      { reason: 'duplicate_key', index_name: '', path: '', skipped_count: 1 },
    ]);
    assert.deepEqual(await hotCopySkips(foreignOrg), []);
    // Its index list is its own.
    await expectRpcError(sdk.client.dataClient.listIndexes(foreignOrg, HOT_STORE), Code.PermissionDenied);
  });

  test('a reading uploaded after a unique index, with an array at its key, is stored but kept out of the hot store', async () => {
    // The real ingest path (SDK upload, COPY, group commit): the upload succeeds and every reading is in
    // STANDARD; HOT_STORAGE leaves out the one whose uid is an array with values (MongoDB would check each
    // element against the unique index; PostgreSQL cannot), and the skip is counted.
    await sdk.client.dataClient.tabularDataCaptureUpload(
      [{ readings: { uid: ['b', 'c'] } }, { readings: { uid: [] } }, { readings: { uid: 'd' } }],
      part.partId,
      'rdk:component:sensor',
      'cold',
      'Readings',
      [
        [new Date(now - minute), new Date(now - minute)],
        [new Date(now - minute), new Date(now - minute)],
        [new Date(now - minute), new Date(now - minute)],
      ],
    );
    const stages = [
      { $match: { 'data.readings.uid': { $exists: true } } },
      { $project: { _id: 0, uid: '$data.readings.uid' } },
    ];
    const uids = (rows: unknown[]) =>
      (rows as { uid: unknown }[]).map((row) => JSON.stringify(row.uid)).sort();
    assert.deepEqual(uids(await sdk.client.dataClient.tabularDataByMQL(sdk.organizationId, stages)), [
      '"a"',
      '"a"',
      '"d"',
      '["a"]',
      '["a"]',
      '["b","c"]',
      '[]',
    ]);
    assert.deepEqual(uids(await hotQuery(stages)), ['"a"', '"d"', '[]']);
    const skips = await hotCopySkips(sdk.organizationId);
    assert.equal(skips[0]?.skipped_count, 3, JSON.stringify(skips));
    // The unique index still holds over what the hot store has: no array document hides under it.
    const arrays = await sdk.testCloud.cloud.deps.db.query(
      `SELECT count(*)::int AS n FROM hot_readings WHERE organization_id = $1
          AND sensordata.doc_index_key(data, '{readings,uid}') = '[' AND data #> '{readings,uid}' <> '[]'::jsonb`,
      [sdk.organizationId],
    );
    assert.equal(arrays.rows[0].n, 0);
  });

  test('a unique index over a path where documents hold arrays is refused (InvalidArgument), not built half-enforcing', async () => {
    // Two hot documents with tags ['x']: MongoDB would enforce the uniqueness per array element across
    // documents, which a PostgreSQL index cannot.
    await seedReadings(sdk.testCloud.cloud, part, { componentName: 'cold' }, [
      { capturedAtMs: now - minute, data: { readings: { tags: ['x'] } } },
      { capturedAtMs: now - minute, data: { readings: { tags: ['x'] } } },
    ]);
    const before = await indexNames();
    const refused = await expectRpcError(
      sdk.client.dataClient.createIndex(
        sdk.organizationId,
        HOT_STORE,
        spec({ 'data.readings.tags': 1, time_received: 1 }, { name: 'tags_time', unique: true }),
      ),
      Code.InvalidArgument,
    );
    assert.match(
      refused.rawMessage,
      /^index_spec\.options\.unique: documents with an array at a key of unique index "tags_time" \(2 at data\.readings\.tags\): MongoDB enforces a unique index per array element across documents, which a PostgreSQL index cannot.*nothing was created$/,
    );
    assert.deepEqual(await indexNames(), before);
    const pgIndexes = await customPgIndexes(sdk.testCloud.cloud.deps.db, 'hot_readings');
    assert.equal(pgIndexes.length, before.length);
    // Without unique, the same keys are fine.
    await sdk.client.dataClient.createIndex(
      sdk.organizationId,
      HOT_STORE,
      spec({ 'data.readings.tags': 1, time_received: 1 }, { name: 'tags_time' }),
    );
    await sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, 'tags_time');
  });

  test('CreateIndex again: identical spec is a no-op, another spec under the name or the same keys under another name AlreadyExists', async () => {
    const before = await indexNames();
    const byName = spec(
      { 'data.readings.seq': -1 },
      {
        name: 'by_seq',
        partialFilterExpression: { 'data.readings.seq': { $exists: true } },
      },
    );
    await sdk.client.dataClient.createIndex(sdk.organizationId, HOT_STORE, byName);
    await sdk.client.dataClient.createIndex(sdk.organizationId, HOT_STORE, byName);
    const other = await expectRpcError(
      sdk.client.dataClient.createIndex(
        sdk.organizationId,
        HOT_STORE,
        spec({ 'data.x': 1 }, { name: 'by_seq' }),
      ),
      Code.AlreadyExists,
    );
    assert.match(
      other.rawMessage,
      /^index_spec\.options\.name: an index named "by_seq" already exists with another spec/,
    );
    const renamed = await expectRpcError(
      sdk.client.dataClient.createIndex(
        sdk.organizationId,
        HOT_STORE,
        spec({ 'data.readings.uid': 1 }, { name: 'uid_again', unique: true }),
      ),
      Code.AlreadyExists,
    );
    assert.match(
      renamed.rawMessage,
      /^index_spec\.keys: index "uid_unique" already has these keys and options/,
    );
    assert.deepEqual(await indexNames(), before);
    assert.equal((await customPgIndexes(sdk.testCloud.cloud.deps.db, 'hot_readings')).length, before.length);
  });

  test('concurrent CreateIndex calls (same and different specs) all succeed and build each index once', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    const before = await indexNames();
    const calls = [
      ...Array.from({ length: 3 }, () => spec({ 'data.readings.c0': 1 })),
      ...Array.from({ length: 4 }, (_, i) => spec({ [`data.readings.c${i + 1}`]: 1 })),
    ];
    await Promise.all(calls.map((s) => sdk.client.dataClient.createIndex(sdk.organizationId, HOT_STORE, s)));
    const added = ['c0', 'c1', 'c2', 'c3', 'c4'].map((c) => `data.readings.${c}_1`);
    assert.deepEqual(await indexNames(), [...before, ...added].sort());
    const pgIndexes = await customPgIndexes(db, 'hot_readings');
    assert.equal(pgIndexes.length, before.length + added.length);
    assert.ok(pgIndexes.every((index) => index.valid));
    await Promise.all(
      added.map((name) => sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, name)),
    );
    assert.deepEqual(await indexNames(), before);
  });

  test('a build does not block inserts; a second build waits for the first; a build cancelled with its call leaves nothing', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    const before = await indexNames();
    // An open writing transaction makes CREATE INDEX CONCURRENTLY wait (as a long upload would).
    const blocker = await db.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE hot_readings IN ROW EXCLUSIVE MODE');
      let firstDone = false;
      const first = sdk.client.dataClient
        .createIndex(sdk.organizationId, HOT_STORE, spec({ 'data.readings.slow': 1 }))
        .then(() => {
          firstDone = true;
        });
      await eventually(async () => {
        const progress = await db.query(
          "SELECT phase FROM pg_stat_progress_create_index WHERE relid = 'hot_readings'::regclass",
        );
        assert.equal(progress.rowCount, 1);
      });
      const second = sdk.client.dataClient.createIndex(
        sdk.organizationId,
        HOT_STORE,
        spec({ 'data.readings.next': 1 }),
      );
      // Writes go on during the build: the readings insert (and its hot copy) completes while it waits.
      const started = Date.now();
      await seedReadings(sdk.testCloud.cloud, part, { componentName: 'cold' }, [
        { capturedAtMs: now - minute, data: { readings: { slow: 'during the build' } } },
      ]);
      assert.ok(Date.now() - started < 20_000, 'the insert did not wait for the build');
      assert.equal(firstDone, false, 'the build is still waiting for the open transaction');
      const rows = await hotQuery([{ $match: { 'data.readings.slow': 'during the build' } }]);
      assert.equal(rows.length, 1);
      await blocker.query('COMMIT');
      await first;
      await second;
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      blocker.release();
    }
    assert.deepEqual(await indexNames(), [...before, 'data.readings.next_1', 'data.readings.slow_1'].sort());
    // A build waiting past the call's deadline is stopped and removed.
    const { bootstrap, url } = sdk.testCloud;
    const { data } = await createAuthedClients(url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key });
    const blocker2 = await db.connect();
    try {
      await blocker2.query('BEGIN');
      await blocker2.query('LOCK TABLE hot_readings IN ROW EXCLUSIVE MODE');
      await expectRpcError(
        data.createIndex(
          {
            organizationId: sdk.organizationId,
            collectionType: dataPb.IndexableCollection.HOT_STORE,
            indexSpec: [serialize({ 'data.readings.cancelled': 1 })],
          },
          { timeoutMs: 1_500 },
        ),
        Code.DeadlineExceeded,
      );
    } finally {
      await blocker2.query('ROLLBACK').catch(() => {});
      blocker2.release();
    }
    await eventually(async () => {
      assert.deepEqual(
        await indexNames(),
        [...before, 'data.readings.next_1', 'data.readings.slow_1'].sort(),
      );
      const pgIndexes = await customPgIndexes(db, 'hot_readings');
      assert.equal(pgIndexes.length, before.length + 2);
      assert.ok(pgIndexes.every((index) => index.valid));
    });
    for (const name of ['data.readings.next_1', 'data.readings.slow_1']) {
      await sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, name);
    }
  });

  test('what a crashed build left (an INVALID index, a record without its index) is swept by the next DDL', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    const before = await indexNames();
    // A unique build over duplicates fails half way, like a crash, leaving an INVALID index and its record.
    const leftover = `cix_${'ab'.repeat(12)}`;
    await db.query(
      `INSERT INTO custom_indexes (organization_id, collection_type, pipeline_name, index_name, spec_json, pg_index_name, created_at)
       VALUES ($1, 'hot_store', '', 'crashed', '{"key":{"data.readings.temperature":1},"options":{"name":"crashed"}}', $2, now())`,
      [sdk.organizationId, leftover],
    );
    await assert.rejects(
      db.query(
        `CREATE UNIQUE INDEX CONCURRENTLY ${leftover} ON hot_readings (sensordata.doc_index_key(data, '{readings,temperature}'))`,
      ),
      /could not create unique index/,
    );
    const orphan = `cix_${'cd'.repeat(12)}`;
    await db.query(
      `INSERT INTO custom_indexes (organization_id, collection_type, pipeline_name, index_name, spec_json, pg_index_name, created_at)
       VALUES ($1, 'hot_store', '', 'orphan', '{"key":{"data.y":1},"options":{"name":"orphan"}}', $2, now())`,
      [sdk.organizationId, orphan],
    );
    assert.ok(
      (await customPgIndexes(db, 'hot_readings')).some((index) => index.name === leftover && !index.valid),
    );
    await sdk.client.dataClient.createIndex(
      sdk.organizationId,
      HOT_STORE,
      spec({ 'data.z': 1 }, { name: 'crashed' }),
    );
    assert.deepEqual(await indexNames(), [...before, 'crashed'].sort());
    const pgIndexes = await customPgIndexes(db, 'hot_readings');
    assert.ok(pgIndexes.every((index) => index.valid && index.name !== leftover));
    await sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, 'crashed');
  });

  test('bad specs answer InvalidArgument naming the field; DeleteIndex drops the index', async () => {
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
    const before = await indexNames();
    await sdk.client.dataClient.deleteIndex(sdk.organizationId, HOT_STORE, 'by_seq');
    assert.deepEqual(
      await indexNames(),
      before.filter((name) => name !== 'by_seq'),
    );
    const pgIndexes = await customPgIndexes(sdk.testCloud.cloud.deps.db, 'hot_readings');
    assert.equal(pgIndexes.length, before.length - 1);
  });
});
