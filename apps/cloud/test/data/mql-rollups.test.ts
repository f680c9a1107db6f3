import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { materializeAllReadingRollups } from '../../src/domain/data/rollups/reading-rollup-materializer.ts';
import { createDatabase, type Database } from '../../src/infra/postgres/database.ts';
import { migrate } from '../../src/infra/postgres/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/test-database.ts';
import { canonicalSet } from './mql-support.ts';
import {
  compileReadings,
  createRollupSources,
  insertReadings,
  type RollupReading,
  type RollupSource,
  rollupCounts,
  runAsOrganization,
} from './rollup-support.ts';

/**
 * Reading rollups (migration 0023) with fixed data: marks written by inserts and deletes, the materializer,
 * the compiled rollup path equal to the raw path before, during and after materialization, and isolation
 * between organizations.
 */

let database: TestDatabase;
let db: Database;
const org = randomUUID();
const other = randomUUID();
let sources: RollupSource[];
let otherSources: RollupSource[];
const base = Date.parse('2025-03-10T00:00:00Z');
const hour = 3_600_000;
const signal = AbortSignal.timeout(120_000);

before(async () => {
  database = await createTestDatabase();
  db = createDatabase(database.url, 4);
  await migrate(db);
  sources = await createRollupSources(db, org);
  otherSources = await createRollupSources(db, other);
});

after(async () => {
  await db.end();
  await database.drop();
});

const pipeline = [
  {
    $match: {
      component_name: { $in: ['sensor-1', 'sensor-2'] },
      time_received: { $gte: new Date(base + hour), $lt: new Date(base + 30 * hour) },
    },
  },
  {
    $group: {
      _id: '$component_name',
      n: { $sum: 1 },
      avg: { $avg: '$data.readings.temperature' },
      total: { $sum: '$data.readings.temperature' },
      min: { $min: '$data.readings.temperature' },
      max: { $max: '$data.readings.temperature' },
      cnt: { $count: {} },
    },
  },
  { $sort: { _id: 1 } },
];

function readingsOf(count: number, value: (i: number) => unknown): RollupReading[] {
  return Array.from({ length: count }, (_, i) => ({
    source: i % 4,
    receivedMs: base + i * 20 * 60_000,
    requestedMs: base + i * 20 * 60_000 - 1000,
    data: { readings: { temperature: value(i) } },
  }));
}

async function both(organizationId = org): Promise<{ rollup: unknown[]; raw: unknown[] }> {
  const rollupSql = compileReadings(pipeline, true);
  assert.match(rollupSql, /ru_union/);
  return {
    rollup: await runAsOrganization(db, organizationId, rollupSql),
    raw: await runAsOrganization(db, organizationId, compileReadings(pipeline, false)),
  };
}

test('marks, materializer, and the rollup path equal to the raw path at every step', async () => {
  await insertReadings(
    db,
    org,
    sources,
    readingsOf(120, (i) => (i % 3) + 0.5),
  );
  await insertReadings(
    db,
    other,
    otherSources,
    readingsOf(120, () => 1000),
  );
  const marked = await rollupCounts(db);
  assert.ok(marked.marks > 0, 'inserts leave marks');
  assert.equal(marked.buckets, 0);
  // Never materialized: all raw.
  let { rollup, raw } = await both();
  assert.deepEqual(canonicalSet(rollup), canonicalSet(raw));
  assert.equal(rollup.length, 2);

  const recomputed = await materializeAllReadingRollups(db, signal);
  assert.ok(recomputed > 0);
  const materialized = await rollupCounts(db);
  assert.equal(materialized.marks, 0);
  assert.ok(materialized.buckets > 0 && materialized.paths > 0);
  ({ rollup, raw } = await both());
  assert.deepEqual(canonicalSet(rollup), canonicalSet(raw));

  // Partly dirty: a string and new numbers in a few hours, and deleted readings in others.
  await insertReadings(db, org, sources, [
    {
      source: 0,
      receivedMs: base + 2 * hour,
      requestedMs: base + 2 * hour,
      data: { readings: { temperature: 'hot' } },
    },
    {
      source: 1,
      receivedMs: base + 3 * hour,
      requestedMs: base + 3 * hour,
      data: { readings: { temperature: -7 } },
    },
  ]);
  await db.query(
    `DELETE FROM readings WHERE organization_id = $1 AND time_received >= $2 AND time_received < $3`,
    [org, new Date(base + 5 * hour), new Date(base + 7 * hour)],
  );
  assert.ok((await rollupCounts(db)).marks > 0, 'inserts and deletes mark their buckets');
  ({ rollup, raw } = await both());
  assert.deepEqual(canonicalSet(rollup), canonicalSet(raw));
  assert.ok(JSON.stringify(rollup).includes('hot'), 'the new string is the $max');

  await materializeAllReadingRollups(db, signal);
  ({ rollup, raw } = await both());
  assert.deepEqual(canonicalSet(rollup), canonicalSet(raw));

  // The other organization sees only its own rows through the same views.
  const theirs = await both(other);
  assert.deepEqual(canonicalSet(theirs.rollup), canonicalSet(theirs.raw));
  for (const group of theirs.rollup as { max: unknown }[]) assert.equal(group.max, 1000);
});
