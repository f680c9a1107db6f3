import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Code } from '@connectrpc/connect';
import { deserialize, serialize } from 'bson';
import { compilePipeline, readingsSource } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import { runOrganizationQuery } from '../../src/domain/data/query-access/organization-query.ts';
import { materializeAllReadingRollups } from '../../src/domain/data/rollups/reading-rollup-materializer.ts';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { expectCode } from '../support/fleet-fixtures.ts';
import { createOwnAndForeignParts, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

/**
 * MQL security suite (meant to grow): whatever the pipeline says, it sees only the caller's
 * organization, cannot write, cannot leave the compiled SQL, and refused stages stay refused. Every
 * attempt either fails with InvalidArgument/PermissionDenied/DeadlineExceeded or returns only the
 * caller's own documents.
 */

const base = Date.parse('2025-03-10T00:00:00Z');
let t: TestCloud;
let owner: AuthedClients;
let org: string;
let foreignOrg: string;
let foreignClients: AuthedClients;

before(async () => {
  t = await startTestCloud({
    configure: (config) => ({ ...config, queryLimits: { ...config.queryLimits, timeoutMs: 1_500 } }),
  });
  const parts = await createOwnAndForeignParts(t, {
    own: 'mine',
    foreign: 'theirs',
    foreignOrganization: 'foreign',
  });
  org = parts.own.organizationId;
  foreignOrg = parts.foreign.organizationId;
  owner = await createAuthedClients(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key });
  foreignClients = await createAuthedClients(t.url, parts.foreignKey);
  await seedReadings(t.cloud, parts.own, { componentName: 'thermo' }, [
    { capturedAtMs: base, data: { readings: { temperature: 20 } } },
    { capturedAtMs: base + 1000, data: { readings: { temperature: 21 } } },
  ]);
  await seedReadings(t.cloud, parts.foreign, { componentName: 'secret' }, [
    { capturedAtMs: base, data: { readings: { temperature: 99, password: 'hunter2' } } },
  ]);
});

after(async () => {
  await t?.stop();
});

async function run(stages: object[], organizationId = org): Promise<Record<string, unknown>[]> {
  const response = await owner.data.tabularDataByMQL({
    organizationId,
    mqlBinary: stages.map((stage) => serialize(stage)),
  });
  return response.rawData.map((bytes) => deserialize(bytes));
}

/** The other organization counting its readings with its own key (it has one). */
async function foreignCount(): Promise<Record<string, unknown>[]> {
  const theirs = await foreignClients.data.tabularDataByMQL({
    organizationId: foreignOrg,
    mqlBinary: [serialize({ $count: 'n' })],
  });
  return theirs.rawData.map((bytes) => deserialize(bytes));
}

const foreignMarkers = /secret|hunter2|theirs/;

function assertOnlyOwn(rows: Record<string, unknown>[]): void {
  for (const row of rows) assert.doesNotMatch(JSON.stringify(row), foreignMarkers);
}

test('matching, grouping or comparing on another organization_id finds nothing', async () => {
  assert.deepEqual(await run([{ $match: { organization_id: foreignOrg } }]), []);
  assert.deepEqual(
    await run([{ $match: { $or: [{ organization_id: foreignOrg }, { component_name: 'secret' }] } }]),
    [],
  );
  assert.deepEqual(await run([{ $match: { $expr: { $ne: ['$organization_id', org] } } }]), []);
  assert.deepEqual(
    await run([
      { $match: { $expr: { $eq: [{ $literal: 1 }, 1] } } },
      { $match: { component_name: 'secret' } },
    ]),
    [],
  );
  const groups = await run([{ $group: { _id: '$organization_id', n: { $sum: 1 } } }]);
  assert.deepEqual(groups, [{ _id: org, n: 2 }]);
  assertOnlyOwn(await run([{ $replaceWith: '$$ROOT' }]));
  assertOnlyOwn(
    await run([
      { $project: { _id: 0, organization_id: { $literal: foreignOrg } } },
      { $match: { organization_id: foreignOrg } },
    ]),
  );
});

test('the rollup path ($match on source fields + $group, migration 0023) sees only the caller organization', async () => {
  // Buckets and paths of both organizations materialized, then one more foreign reading (a dirty mark).
  const db = t.cloud.deps.db;
  await materializeAllReadingRollups(db, AbortSignal.timeout(60_000));
  const rolledUp = await db.query(
    'SELECT count(DISTINCT organization_id)::int AS n FROM reading_rollup_buckets',
  );
  assert.equal(rolledUp.rows[0].n, 2, 'both organizations have materialized buckets');
  await db.query(
    `INSERT INTO readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data)
     SELECT organization_id, source_id, captured_at + interval '2 hours', time_requested + interval '2 hours',
            time_received + interval '2 hours', synced_at, size_bytes, data
       FROM readings WHERE organization_id = $1`,
    [foreignOrg],
  );
  const hourStart = new Date(base);
  const pipelines: [object[], Record<string, unknown>[]][] = [
    [
      [{ $group: { _id: '$organization_id', n: { $sum: 1 }, max: { $max: '$data.readings.temperature' } } }],
      [{ _id: org, n: 2, max: 21 }],
    ],
    [
      [{ $group: { _id: null, n: { $count: {} }, avg: { $avg: '$data.readings.temperature' } } }],
      [{ _id: null, n: 2, avg: 20.5 }],
    ],
    [[{ $match: { component_name: 'secret' } }, { $group: { _id: '$component_name', n: { $sum: 1 } } }], []],
    [[{ $match: { organization_id: foreignOrg } }, { $group: { _id: null, n: { $sum: 1 } } }], []],
    [
      [
        { $match: { time_received: { $gte: hourStart } } },
        { $group: { _id: '$component_name', n: { $sum: 1 }, pw: { $max: '$data.readings.password' } } },
      ],
      [{ _id: 'thermo', n: 2, pw: null }],
    ],
  ];
  try {
    for (const [stages, expected] of pipelines) {
      const rows = await run(stages);
      assertOnlyOwn(rows);
      assert.deepEqual(rows, expected, JSON.stringify(stages));
    }
  } finally {
    await db.query('DELETE FROM readings WHERE organization_id = $1 AND captured_at > $2', [
      foreignOrg,
      new Date(base + 3_600_000),
    ]);
  }
});

test('a foreign organization_id in the request is denied, not answered', async () => {
  await expectCode(run([{ $match: {} }], foreignOrg), Code.PermissionDenied);
  assert.deepEqual(await foreignCount(), [{ n: 1 }], 'their own query still works');
});

test('stages that write, join or run code are refused by name and stage index', async () => {
  const refused: [object, RegExp][] = [
    [{ $out: 'readings_copy' }, /mql_binary\[1\] \(\$out\): stage \$out is not allowed/],
    [{ $merge: { into: 'readings' } }, /\$merge is not allowed/],
    [
      { $lookup: { from: 'readings', localField: 'x', foreignField: 'y', as: 'z' } },
      /\$lookup is not allowed/,
    ],
    [{ $graphLookup: { from: 'readings' } }, /\$graphLookup is not allowed/],
    [{ $unionWith: 'readings' }, /\$unionWith is not allowed/],
    [{ $function: {} }, /\$function is not allowed/],
    [{ $where: 'true' }, /\$where is not allowed/],
    [{ $currentOp: {} }, /\$currentOp is not allowed/],
  ];
  for (const [stage, message] of refused) {
    await expectCode(run([{ $match: {} }, stage]), Code.InvalidArgument, message);
  }
  await expectCode(
    run([{ $match: { $where: 'sleep(1000)' } }]),
    Code.InvalidArgument,
    /\$where is not allowed/,
  );
  await expectCode(
    run([{ $project: { x: { $function: { body: 'return 1', args: [], lang: 'js' } } } }]),
    Code.InvalidArgument,
    /unsupported expression operator \$function/,
  );
  await expectCode(
    run([{ $group: { _id: null, x: { $accumulator: {} } } }]),
    Code.InvalidArgument,
    /unsupported accumulator \$accumulator/,
  );
});

test('quotes, comments and SQL in names, values, patterns and formats stay data', async () => {
  const hostile = "x'); DROP TABLE readings; SELECT pg_sleep(5); --";
  assert.deepEqual(await run([{ $match: { component_name: hostile } }]), []);
  assert.deepEqual(await run([{ $match: { [`data.${hostile.replaceAll('.', '')}`]: 1 } }]), []);
  assert.deepEqual(await run([{ $match: { 'data."readings"': { $exists: true } } }]), []);
  assert.deepEqual(await run([{ $match: { component_name: { $regex: "'; DROP TABLE readings; --" } } }]), []);
  await expectCode(
    run([{ $match: { component_name: { $regex: hostile } } }]),
    Code.InvalidArgument,
    /invalid regular expression/,
  );
  const shaped = await run([
    { $project: { _id: 0, [hostile.replaceAll('.', '')]: { $concat: ['$component_name', hostile] } } },
    { $limit: 1 },
  ]);
  assert.deepEqual(shaped, [{ [hostile.replaceAll('.', '')]: `thermo${hostile}` }]);
  const formatted = await run([
    { $project: { _id: 0, d: { $dateToString: { format: `%Y"'); SELECT 1; --`, date: '$time_received' } } } },
    { $limit: 1 },
  ]);
  assert.deepEqual(formatted, [{ d: `2025"'); SELECT 1; --` }]);
  await expectCode(
    run([{ $project: { d: { $dateToString: { date: '$time_received', timezone: "UTC'; SELECT 1; --" } } } }]),
    Code.InvalidArgument,
    /timezone must be an Olson name/,
  );
  assert.deepEqual(await run([{ $count: 'n' }]), [{ n: 2 }], 'readings are intact');
});

test('unknown variables, malformed stages and limits answer InvalidArgument naming the stage', async () => {
  await expectCode(
    run([{ $project: { x: '$$SEARCH_META' } }]),
    Code.InvalidArgument,
    /mql_binary\[0\] \(\$project\): unsupported variable \$\$SEARCH_META/,
  );
  await expectCode(
    run([{ $match: {}, $limit: 1 }]),
    Code.InvalidArgument,
    /mql_binary\[0\]: a stage must be a document with exactly one key/,
  );
  await expectCode(
    run([{ $match: {} }, { $limit: -1 }]),
    Code.InvalidArgument,
    /mql_binary\[1\] \(\$limit\): needs an integer of at least 1/,
  );
  await expectCode(
    run([{ $match: { a: { $gt: 1, $foo: 2 } } }]),
    Code.InvalidArgument,
    /unsupported query operator \$foo/,
  );
  await expectCode(
    run(Array.from({ length: 1001 }, () => ({ $match: {} }))),
    Code.InvalidArgument,
    /at most 1000 stages/,
  );
  const broken = await owner.data
    .tabularDataByMQL({
      organizationId: org,
      mqlBinary: [serialize({ $match: {} }), Buffer.from([0xff, 0xff, 0, 0])],
    })
    .then(
      () => undefined,
      (error: Error) => error,
    );
  assert.match(String(broken), /mql_binary\[1\]: is not a valid BSON document/);
});

test('a result over the row cap answers ResourceExhausted naming the limit', async () => {
  const many = Array.from({ length: 400 }, (_, i) => i);
  await expectCode(
    run([
      { $project: { a: { $literal: many }, b: { $literal: many } } },
      { $unwind: '$a' },
      { $unwind: '$b' },
    ]),
    Code.ResourceExhausted,
    /limit of 100000 rows/,
  );
  assert.deepEqual(await run([{ $count: 'n' }]), [{ n: 2 }], 'the next query is answered');
});

test('runaway pipelines hit the time budget (DeadlineExceeded) and leave the server serving', async () => {
  const explode = {
    $addFields: {
      n: {
        $concatArrays: [
          [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
          [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        ],
      },
    },
  };
  const stages: object[] = [explode];
  for (let i = 0; i < 6; i++) stages.push({ $unwind: '$n' }, explode);
  stages.push({ $group: { _id: null, n: { $sum: 1 } } });
  await expectCode(run(stages), Code.DeadlineExceeded, /time limit of 1500 ms/);
  assert.deepEqual(await run([{ $count: 'n' }]), [{ n: 2 }]);
  // Meanwhile another organization's queries are answered at once, not after the runaway ends.
  const runaway = expectCode(run(stages), Code.DeadlineExceeded, /time limit of 1500 ms/);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const began = performance.now();
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await foreignCount(), [{ n: 1 }]);
  }
  const elapsedMs = performance.now() - began;
  await runaway;
  assert.ok(elapsedMs < 1_000, `three queries of another organization took ${elapsedMs} ms during a runaway`);
});

test('the database, not the compiler, enforces the scope: compiled SQL over the raw table is refused', async () => {
  const stages = [decodeStage(serialize({ $match: {} }), 0)];
  const escaping = compilePipeline(stages, {
    ...readingsSource('public.readings'),
    fields: [{ name: 'data', sql: 'src.data', type: 'jsonb' }],
  });
  await assert.rejects(
    runOrganizationQuery(
      { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
      {
        organizationId: org,
        sql: escaping.sql,
        limits: t.cloud.deps.config.queryLimits,
        rowShape: 'json-document',
      },
      AbortSignal.timeout(10_000),
    ),
    (error: Error & { code?: string }) =>
      error.code === 'PermissionDenied' && /permission denied/.test(error.message),
  );
});

test('saved queries are per organization: names and IDs of another organization are not found', async () => {
  const { id } = await foreignClients.data.createSavedQuery({
    organizationId: foreignOrg,
    name: 'theirs',
    mqlBinary: [serialize({ $match: {} })],
  });
  await expectCode(owner.data.getSavedQuery({ id }), Code.NotFound);
  await expectCode(owner.data.deleteSavedQuery({ id }), Code.NotFound);
  await expectCode(
    owner.data.updateSavedQuery({ id, name: 'mine', mqlBinary: [serialize({ $match: {} })] }),
    Code.NotFound,
  );
  await expectCode(
    owner.data.tabularDataByMQL({ organizationId: org, mqlBinary: [], queryPrefixName: 'theirs' }),
    Code.NotFound,
    /saved query "theirs" not found/,
  );
  await expectCode(
    owner.data.listSavedQueries({ organizationId: foreignOrg, limit: 10n }),
    Code.PermissionDenied,
  );
  await expectCode(
    owner.data.createSavedQuery({
      organizationId: foreignOrg,
      name: 'planted',
      mqlBinary: [serialize({ $match: {} })],
    }),
    Code.PermissionDenied,
  );
  const theirs = await foreignClients.data.getSavedQuery({ id });
  assert.equal(theirs.savedQuery?.name, 'theirs', 'unchanged for its owner');
});
