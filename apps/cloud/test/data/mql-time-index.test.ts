import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { serialize } from 'bson';
import fc from 'fast-check';
import {
  ensureReadingPartitions,
  monthIndexOf,
  partitionNameOf,
} from '../../src/domain/data/ingest/reading-partitions.ts';
import { compilePipeline, type MqlSource, readingsSource } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import type { Database } from '../../src/infra/postgres/database.ts';
import { createMigratedDatabase, type MigratedDatabase } from '../support/test-database.ts';
import { canonicalSet, fromTagged } from './mql-support.ts';

/**
 * Time filters on the real schema, through the real per-organization view: a `time_received` range uses
 * the BRIN index (migration 0021), a `time_requested` range also bounds `captured_at` (the partition key),
 * so PostgreSQL prunes partitions — and that extra bound never changes a result.
 */

let database: MigratedDatabase;
let db: Database;
const big = randomUUID(); // 5 months of readings, one per minute: for plans
const small = randomUUID(); // a few hundred readings with boundary cases: for results
const base = Date.parse('2025-01-01T00:00:00Z');
const minute = 60_000;
const bigCount = 5 * 31 * 24 * 60;

before(async () => {
  database = await createMigratedDatabase(2);
  db = database.db;
  const months = new Set<number>();
  for (let at = base; at <= base + bigCount * minute; at += 86_400_000) months.add(monthIndexOf(at));
  await ensureReadingPartitions(db, months);
  for (const [org, count, step] of [
    [big, bigCount, minute],
    [small, 600, 7 * 3_600_000],
  ] as const) {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO capture_sources (organization_id, location_id, robot_id, part_id, component_type,
         component_name, method_name, source_hash)
       SELECT $1::uuid, 'loc', gen_random_uuid(), gen_random_uuid(), 'rdk:component:sensor', 'sensor-' || n,
         'Readings', sha256(convert_to($1::text || n::text, 'UTF8'))
       FROM generate_series(0, 3) AS n RETURNING id`,
      [org],
    );
    // Every 10th reading has no time_requested (captured_at = time_received then); the others were
    // requested 2 s before they were received; every 7th is received at a whole hour, a boundary case.
    await db.query(
      `INSERT INTO readings (organization_id, source_id, captured_at, time_requested, time_received,
         synced_at, size_bytes, data)
       SELECT $1::uuid, ($2::bigint[])[1 + i % 4], COALESCE(req, rec), req, rec, rec, 10,
         jsonb_build_object('readings', jsonb_build_object('i', i))
       FROM generate_series(0, $3::int - 1) AS i,
         LATERAL (SELECT to_timestamp(($4::bigint + i * $5::bigint) / 1000.0) AS rec) r,
         LATERAL (SELECT CASE WHEN i % 10 = 0 THEN NULL
                              WHEN i % 7 = 0 THEN date_trunc('hour', rec)
                              ELSE rec - interval '2 seconds' END AS req) q`,
      [org, rows.map((row) => row.id), count, base, step],
    );
  }
  // VACUUM summarizes the BRIN block ranges now (autosummarize would do it shortly after the inserts).
  await db.query('VACUUM ANALYZE readings');
  await db.query('ANALYZE capture_sources');
});

after(() => database.close());

type Row = Record<string, unknown>;

async function asOrganization<R>(
  org: string,
  run: (query: (sql: string) => Promise<Row[]>) => Promise<R>,
): Promise<R> {
  const client = await db.connect();
  try {
    await client.query('BEGIN READ ONLY');
    await client.query(
      `SELECT set_config('mcloud.query_token', mcloud_private.organization_token($1), true)`,
      [org],
    );
    await client.query('SET LOCAL ROLE mcloud_query');
    await client.query('SET LOCAL search_path = sensordata, public, pg_catalog');
    await client.query(`SET LOCAL TimeZone = 'UTC'`);
    return await run(async (sql) => (await client.query<Row>(sql)).rows);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

function compiled(pipeline: readonly object[], source: MqlSource = readingsSource()): string {
  return compilePipeline(
    pipeline.map((stage, index) => decodeStage(serialize(stage), index)),
    source,
  ).sql;
}

async function planOf(pipeline: readonly object[]): Promise<string> {
  return asOrganization(big, async (query) => {
    const rows = await query(`EXPLAIN ${compiled(pipeline)}`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

const weekFrom = new Date('2025-03-10T00:00:00Z');
const weekTo = new Date('2025-03-17T00:00:00Z');

test('a one-week time_received $match reads block ranges through the BRIN index', async () => {
  const plan = await planOf([
    { $match: { component_name: 'sensor-1', time_received: { $gte: weekFrom, $lt: weekTo } } },
  ]);
  assert.match(plan, /Bitmap Index Scan on \S*time_received\S*/, plan);
  assert.doesNotMatch(plan, /Seq Scan on readings_/, plan);
});

test('a one-week time_requested $match scans only the partition of that week', async () => {
  const plan = await planOf([
    { $match: { time_requested: { $gte: weekFrom, $lt: weekTo } } },
    { $group: { _id: '$component_name', n: { $sum: 1 } } },
  ]);
  const partitions = new Set(plan.match(/readings_y\d{4}m\d{2}/g));
  assert.deepEqual([...partitions], [partitionNameOf(monthIndexOf(weekFrom.getTime()))], plan);
  // ... and within it the (organization_id, captured_at, id) or (source_id, captured_at, id) B-tree.
  assert.match(plan, /Index (Only )?Scan|Bitmap Index Scan on \S*(organization|source)\S*/, plan);
});

test('the time_requested bound on captured_at never changes a result (200 random $match stages)', async () => {
  const { rows } = await db.query<{ t: Date }>(
    'SELECT time_requested AS t FROM readings WHERE organization_id = $1 AND time_requested IS NOT NULL',
    [small],
  );
  const instants = rows.map((row) => row.t.getTime());
  const without: MqlSource = {
    ...readingsSource(),
    fields: readingsSource().fields.map(({ rangeColumn: _, ...field }) => field),
  };
  const instant = fc.oneof(
    fc.constantFrom(...instants).map((ms) => new Date(ms)),
    fc
      .tuple(fc.constantFrom(...instants), fc.integer({ min: -3_000, max: 3_000 }))
      .map(([ms, d]) => new Date(ms + d)),
  );
  const comparison = fc.oneof(
    fc
      .record({ op: fc.constantFrom('$gt', '$gte', '$lt', '$lte', '$eq', '$ne'), at: instant })
      .map(({ op, at }) => ({
        [op]: at,
      })),
    fc.tuple(instant, instant).map(([a, b]) => ({ $gte: a < b ? a : b, $lt: a < b ? b : a })),
    fc
      .record({ op: fc.constantFrom('$gt', '$lte'), at: instant })
      .map(({ op, at }) => ({ $not: { [op]: at } })),
    fc.constant({ $eq: null }),
    fc.constant({ $gte: null }),
    fc
      .array(fc.option(instant, { nil: null }), { minLength: 1, maxLength: 3 })
      .map((values) => ({ $in: values })),
  );
  const condition = fc.oneof(
    comparison.map((c) => ({ time_requested: c })),
    fc
      .tuple(comparison, comparison)
      .map(([a, b]) => ({ $or: [{ time_requested: a }, { time_requested: b }] })),
    fc
      .tuple(comparison, comparison)
      .map(([a, b]) => ({ $nor: [{ time_requested: a }, { time_requested: b }] })),
    fc.tuple(comparison, fc.constantFrom('sensor-0', 'sensor-3')).map(([a, name]) => ({
      time_requested: a,
      component_name: name,
    })),
  );
  let rewritten = 0;
  let nonEmpty = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(condition, { minLength: 1, maxLength: 2 }), async (matches) => {
      const pipeline = [...matches.map((match) => ({ $match: match })), { $project: { data: 0 } }];
      const withBound = compiled(pipeline);
      if (withBound.includes('src."captured_at"')) rewritten += 1;
      const [actual, expected] = await asOrganization(small, async (query) => [
        (await query(withBound)).map((row) => fromTagged(row.doc)),
        (await query(compiled(pipeline, without))).map((row) => fromTagged(row.doc)),
      ]);
      if (expected.length > 0) nonEmpty += 1;
      assert.deepEqual(canonicalSet(actual), canonicalSet(expected));
    }),
    { numRuns: 200, seed: Number(process.env.MQL_SEED ?? Date.now() % 2_147_483_647), verbose: 1 },
  );
  assert.ok(rewritten > 50, `only ${rewritten} pipelines bounded captured_at`);
  assert.ok(nonEmpty > 50, `only ${nonEmpty} pipelines matched anything`);
});
