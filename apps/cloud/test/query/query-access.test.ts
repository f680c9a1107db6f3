import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deserialize, ObjectId } from 'bson';
import {
  defaultQueryLimits,
  type OrganizationQuery,
  runOrganizationQuery,
} from '../../src/domain/data/query-access/organization-query.ts';
import { acquireQuerySlot } from '../../src/domain/data/query-access/query-gate.ts';
import type { DomainError } from '../../src/domain/errors.ts';
import { createOwnAndForeignParts, type SeedPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let t: TestCloud;
let orgA: string;
let orgB: string;
let partA: SeedPart;
const base = Date.parse('2025-03-10T00:00:00Z');

before(async () => {
  t = await startTestCloud();
  const parts = await createOwnAndForeignParts(t, { own: 'a', foreign: 'b', foreignOrganization: 'other' });
  partA = parts.own;
  const partB = parts.foreign;
  orgA = partA.organizationId;
  orgB = partB.organizationId;
  await seedReadings(t.cloud, partA, { componentName: 'thermo', tags: ['x'] }, [
    { capturedAtMs: base, data: { readings: { temperature: 20.5, count: 3, big: 2 ** 40, name: 'a' } } },
    { capturedAtMs: base + 60_000, data: { readings: { temperature: 21 } } },
  ]);
  await seedReadings(t.cloud, partB, { componentName: 'secret-b' }, [
    { capturedAtMs: base, data: { readings: { temperature: 99 } } },
  ]);
});

after(async () => {
  await t?.stop();
});

function run(sql: string, extra: Partial<OrganizationQuery> = {}) {
  return runOrganizationQuery(
    { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
    { organizationId: orgA, sql, limits: defaultQueryLimits, ...extra },
    new AbortController().signal,
  );
}

async function rows(sql: string, extra: Partial<OrganizationQuery> = {}) {
  return (await run(sql, extra)).documents.map((bytes) => deserialize(bytes, { promoteLongs: false }));
}

async function rejects(sql: string, code: string, pattern: RegExp) {
  await assert.rejects(run(sql), (error: DomainError) => {
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

test('the view shows only the organization of the token, with the §3.2 fields and BSON types', async () => {
  const docs = await rows('SELECT * FROM readings ORDER BY time_received');
  assert.equal(docs.length, 2);
  const first = docs[0] as Record<string, unknown>;
  assert.deepEqual(Object.keys(first), [
    '_id',
    'organization_id',
    'location_id',
    'robot_id',
    'part_id',
    'component_type',
    'component_name',
    'method_name',
    'time_requested',
    'time_received',
    'tags',
    'additional_parameters',
    'data',
  ]);
  assert.ok(first._id instanceof ObjectId);
  assert.equal(first.organization_id, orgA);
  assert.equal(first.part_id, partA.partId);
  assert.deepEqual(first.time_received, new Date(base));
  assert.deepEqual(first.tags, ['x']);
  const data = first.data as { readings: Record<string, { valueOf(): unknown }> };
  assert.equal(data.readings.temperature?.valueOf(), 20.5);
  assert.equal(data.readings.count, 3);
  assert.equal(String(data.readings.big), String(2 ** 40));
  assert.equal((await rows('SELECT * FROM readings', { organizationId: orgB })).length, 1);
});

test('column types become SDK-decodable BSON (no Decimal128)', async () => {
  const [doc] = await rows(
    `SELECT count(*) AS n, avg((data->'readings'->>'temperature')::numeric) AS mean, 5000000000::bigint AS big,
            true AS flag, now()::date AS day, 'x'::text AS s, NULL AS nothing, ARRAY[1,2] AS ints FROM readings`,
  );
  assert.equal(doc?.n, 2);
  assert.equal(doc?.mean.valueOf(), 20.75);
  assert.equal(doc?.big.toString(), '5000000000');
  assert.equal(doc?.flag, true);
  assert.ok(doc?.day instanceof Date);
  assert.equal(doc?.nothing, null);
  assert.deepEqual(doc?.ints, [1, 2]);
});

test('forged or foreign tokens, base tables and private objects are refused by the database', async () => {
  await rejects('SELECT * FROM public.readings', 'PermissionDenied', /permission denied/);
  await rejects('SELECT * FROM public.capture_sources', 'PermissionDenied', /permission denied/);
  await rejects('SELECT * FROM mcloud_private.query_secret', 'PermissionDenied', /permission denied/);
  await rejects(
    `SELECT mcloud_private.organization_token('${orgB}')`,
    'PermissionDenied',
    /permission denied/,
  );
  await rejects("SELECT set_config('role', 'postgres', true)", 'PermissionDenied', /permission denied/);
  await rejects(
    `SELECT set_config('mcloud.query_token', '${orgB}.${'0'.repeat(64)}', true)`,
    'PermissionDenied',
    /permission denied/,
  );
  await rejects('DELETE FROM readings', 'InvalidArgument', /syntax error/);
  await rejects('SELECT 1; DELETE FROM readings', 'InvalidArgument', /multiple commands|syntax/);
  // A session that sets a forged token by SET (not through the query path) still sees nothing.
  const client = await t.cloud.deps.db.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL mcloud.query_token = '${orgB}.${'a'.repeat(64)}'`);
    await client.query('SET LOCAL ROLE mcloud_query');
    const seen = await client.query('SELECT count(*)::int AS n FROM sensordata.readings');
    assert.equal(seen.rows[0].n, 0);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
});

test('limits: rows, bytes and time answer with the limit', async () => {
  await assert.rejects(
    run('SELECT * FROM readings', { limits: { ...defaultQueryLimits, maxRows: 1 } }),
    (error: DomainError) => error.code === 'ResourceExhausted' && /limit of 1 rows/.test(error.message),
  );
  await assert.rejects(
    run('SELECT * FROM readings', { limits: { ...defaultQueryLimits, maxBytes: 100 } }),
    (error: DomainError) => error.code === 'ResourceExhausted' && /limit of 100 bytes/.test(error.message),
  );
  await assert.rejects(
    run('SELECT count(*) FROM generate_series(1, 100000000)', {
      limits: { ...defaultQueryLimits, timeoutMs: 200 },
    }),
    (error: DomainError) => error.code === 'DeadlineExceeded' && /200 ms/.test(error.message),
  );
  // The pooled connection is clean afterwards.
  assert.equal((await rows('SELECT count(*) AS n FROM readings'))[0]?.n, 2);
});

test('the statement runs in a READ ONLY transaction, as mcloud_query, under the statement timeout', async () => {
  const [doc] = await rows(
    `SELECT current_setting('transaction_read_only') AS read_only, current_setting('statement_timeout') AS timeout,
            current_user AS role`,
    { limits: { ...defaultQueryLimits, timeoutMs: 4_321 } },
  );
  assert.deepEqual(doc, { read_only: 'on', timeout: '4321ms', role: 'mcloud_query' });
});

test('parameters and json-document rows (for compiled MQL)', async () => {
  const docs = await rows(
    `SELECT jsonb_build_object('c', component_name, 't', jsonb_build_object('$date', time_received)) FROM readings WHERE component_name = $1 ORDER BY time_received LIMIT 1`,
    { params: ['thermo'], rowShape: 'json-document' },
  );
  assert.deepEqual(docs, [{ c: 'thermo', t: new Date(base) }]);
});

test('an unknown column answers InvalidArgument with the position in the user text', async () => {
  await rejects(
    'SELECT nope FROM readings',
    'InvalidArgument',
    /column "nope" does not exist \(at character 8\)/,
  );
});

test('one organization takes at most half of the query slots: another organization is not held up', async () => {
  const limits = { ...defaultQueryLimits, maxConcurrent: 2, timeoutMs: 10_000 };
  const slow = 'SELECT clock_timestamp() AS a, pg_sleep(0.4) AS s, clock_timestamp() AS b';
  const spanOf = async (promise: Promise<Record<string, unknown>[]>) => {
    const [doc] = await promise;
    return [(doc?.a as Date).getTime(), (doc?.b as Date).getTime()];
  };
  const first = spanOf(rows(slow, { limits }));
  const second = spanOf(rows(slow, { limits }));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const other = spanOf(rows(slow, { limits, organizationId: orgB }));
  const [[firstStart, firstEnd], [secondStart], [otherStart]] = await Promise.all([first, second, other]);
  assert.ok((otherStart as number) < (firstEnd as number), 'the other organization ran at once');
  assert.ok((secondStart as number) >= (firstEnd as number), 'the second query of A waited for the first');
  assert.ok((firstStart as number) <= (otherStart as number));
});

test('concurrency gate: queries of one pool beyond the limit wait their turn, then give up naming the limit', async () => {
  const limits = { ...defaultQueryLimits, maxConcurrent: 1, timeoutMs: 10_000 };
  const docs = await Promise.all(
    [1, 2, 3].map(() =>
      rows('SELECT clock_timestamp() AS a, pg_sleep(0.1) AS s, clock_timestamp() AS b', { limits }),
    ),
  );
  const spans = docs
    .map(([doc]): [number, number] => [(doc?.a as Date).getTime(), (doc?.b as Date).getTime()])
    .sort((x, y) => x[0] - y[0]);
  for (let i = 1; i < spans.length; i++) {
    assert.ok(
      (spans[i]?.[0] as number) >= (spans[i - 1]?.[1] as number),
      `queries overlapped: ${JSON.stringify(spans)}`,
    );
  }
  const pool = {};
  const signal = new AbortController().signal;
  const release = await acquireQuerySlot(pool, 1, 1000, signal);
  await assert.rejects(acquireQuerySlot(pool, 1, 30, signal), /too many queries running at once \(limit 1\)/);
  const waiting = acquireQuerySlot(pool, 1, 5000, signal);
  release();
  (await waiting)();
  (await acquireQuerySlot(pool, 1, 30, signal))();
});
