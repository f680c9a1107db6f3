import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  enqueueReadingRollups,
  registerReadingRollupJob,
} from '../../src/domain/data/rollups/reading-rollup-job.ts';
import {
  materializeAllReadingRollups,
  materializeReadingRollups,
} from '../../src/domain/data/rollups/reading-rollup-materializer.ts';
import { createJobQueue } from '../../src/infra/jobs/job-queue.ts';
import type { Database } from '../../src/infra/postgres/database.ts';
import type { TestDatabase } from '../support/test-database.ts';
import { canonicalSet } from './mql-support.ts';
import {
  compileReadings,
  createRollupTestContext,
  dropRollupTestContext,
  insertReadings,
  type RollupReading,
  type RollupSource,
  type RollupTestContext,
  rollupCounts,
  runAsOrganization,
} from './rollup-support.ts';

/**
 * Reading rollups (migration 0023) with fixed data: marks written by inserts and deletes, the materializer,
 * the compiled rollup path equal to the raw path before, during and after materialization, and isolation
 * between organizations.
 */

let context: RollupTestContext;
let db: Database;
let database: TestDatabase;
let org: string;
let other: string;
let sources: RollupSource[];
let otherSources: RollupSource[];
const base = Date.parse('2025-03-10T00:00:00Z');
const hour = 3_600_000;
const signal = AbortSignal.timeout(120_000);

before(async () => {
  context = await createRollupTestContext();
  ({ db, database, org, other, sources, otherSources } = context);
});

after(() => dropRollupTestContext(context));

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

// --- Races between writers and the materializer ------------------------------------------------------------

const countPipeline = [
  { $match: { time_received: { $gte: new Date(base), $lt: new Date(base + 100 * hour) } } },
  { $group: { _id: null, n: { $sum: 1 }, total: { $sum: '$data.v' }, max: { $max: '$data.v' } } },
];

async function exactCounts(): Promise<{ n: number; total: number; max: number }> {
  const rollupSql = compileReadings(countPipeline, true);
  assert.match(rollupSql, /ru_union/);
  const rollup = await runAsOrganization(db, org, rollupSql);
  const raw = await runAsOrganization(db, org, compileReadings(countPipeline, false));
  assert.deepEqual(canonicalSet(rollup), canonicalSet(raw));
  const { n, total, max } = (rollup[0] ?? { n: 0, total: 0, max: 0 }) as Record<string, number>;
  return { n: n as number, total: total as number, max: max as number };
}

/** `count` readings of source 0 in hour `at` with data.v = value. */
function inHour(at: number, count: number, value: number): RollupReading[] {
  return Array.from({ length: count }, (_, i) => ({
    source: 0,
    receivedMs: base + at * hour + i * 1000,
    requestedMs: base + at * hour + i * 1000,
    data: { v: value },
  }));
}

async function freshClean(): Promise<void> {
  await db.query('TRUNCATE readings');
  await insertReadings(db, org, sources, inHour(40, 5, 1));
  await materializeAllReadingRollups(db, signal);
  assert.equal((await rollupCounts(db)).marks, 0);
}

test('a writer committing while the materializer recomputes keeps its mark (and the query stays exact)', async () => {
  await freshClean();
  await insertReadings(db, org, sources, inHour(40, 2, 2));
  const pass = await materializeReadingRollups(db, signal, {
    // After the pass read its marks (its snapshot is taken): a writer commits rows into the same bucket.
    afterMarksRead: async () => {
      await insertReadings(db, org, sources, inHour(40, 3, 10));
    },
  });
  assert.equal(pass.buckets, 1);
  assert.ok((await rollupCounts(db)).marks > 0, "the concurrent writer's mark survives the pass");
  assert.deepEqual(await exactCounts(), { n: 10, total: 39, max: 10 });
  await materializeAllReadingRollups(db, signal);
  assert.equal((await rollupCounts(db)).marks, 0);
  assert.deepEqual(await exactCounts(), { n: 10, total: 39, max: 10 });
});

test('a writer whose transaction spans a whole pass: its rows and mark appear together', async () => {
  await freshClean();
  const writer = await db.connect();
  let committed = false;
  try {
    await writer.query('BEGIN');
    await insertReadings(writer, org, sources, inHour(41, 4, 7));
    // The pass runs while the writer's rows and mark are uncommitted: it sees neither.
    await insertReadings(db, org, sources, inHour(40, 1, 3));
    const pass = await materializeReadingRollups(db, signal);
    assert.equal(pass.buckets, 1);
    assert.deepEqual(await exactCounts(), { n: 6, total: 8, max: 3 });
    await writer.query('COMMIT');
    committed = true;
  } finally {
    if (!committed) await writer.query('ROLLBACK');
    writer.release();
  }
  assert.ok((await rollupCounts(db)).marks > 0);
  assert.deepEqual(await exactCounts(), { n: 10, total: 36, max: 7 });
  await materializeAllReadingRollups(db, signal);
  assert.deepEqual(await exactCounts(), { n: 10, total: 36, max: 7 });
});

test('deletes mark their buckets, also while the materializer runs', async () => {
  await freshClean();
  await insertReadings(db, org, sources, inHour(42, 3, 5));
  await materializeAllReadingRollups(db, signal);
  // A delete committed after the pass's snapshot: the pass recomputes hour 42 with the deleted rows, and
  // the delete's mark keeps the bucket dirty.
  await insertReadings(db, org, sources, inHour(42, 1, 6));
  await materializeReadingRollups(db, signal, {
    afterMarksRead: async () => {
      await db.query('DELETE FROM readings WHERE organization_id = $1 AND time_received >= $2', [
        org,
        new Date(base + 42 * hour),
      ]);
    },
  });
  assert.ok((await rollupCounts(db)).marks > 0);
  assert.deepEqual(await exactCounts(), { n: 5, total: 5, max: 1 });
  await materializeAllReadingRollups(db, signal);
  assert.deepEqual(await exactCounts(), { n: 5, total: 5, max: 1 });
  const buckets = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM reading_rollup_buckets WHERE received_hour = $1',
    [new Date(base + 42 * hour)],
  );
  assert.equal(buckets.rows[0]?.n, 0, 'a bucket whose rows are all gone has no rollup');
});

test('one pass at a time: a second materializer does nothing while the first holds the lock', async () => {
  await freshClean();
  await insertReadings(db, org, sources, inHour(43, 2, 4));
  let second: Awaited<ReturnType<typeof materializeReadingRollups>> | undefined;
  const first = await materializeReadingRollups(db, signal, {
    afterMarksRead: async () => {
      second = await materializeReadingRollups(db, signal);
    },
  });
  assert.equal(first.ran, true);
  assert.deepEqual(second, { buckets: 0, marks: 0, ran: false });
  assert.equal((await rollupCounts(db)).marks, 0);
});

test('the rollup views show the query role only its own organization, and the tables not at all', async () => {
  await freshClean();
  await insertReadings(db, other, otherSources, inHour(40, 3, 100));
  await materializeAllReadingRollups(db, signal);
  await insertReadings(db, other, otherSources, inHour(44, 1, 100)); // a mark of the other organization
  const ownIds = new Set(sources.map((source) => source.id));
  for (const view of [
    'reading_sources',
    'reading_rollup_buckets',
    'reading_rollup_marks',
    'reading_bucket_rows',
  ]) {
    const rows = (await runAsOrganization(
      db,
      org,
      `SELECT json_build_object('source', source_id::text) AS doc FROM sensordata.${view}`,
    )) as { source: string }[];
    for (const row of rows) assert.ok(ownIds.has(row.source), `${view} shows a foreign source`);
  }
  for (const table of ['reading_rollup_buckets', 'reading_rollup_marks']) {
    await assert.rejects(
      runAsOrganization(db, org, `SELECT json_build_object('n', count(*)) AS doc FROM public.${table}`),
      /permission denied/,
    );
  }
  // Without a valid token the views are empty.
  const client = await db.connect();
  try {
    await client.query('BEGIN READ ONLY');
    await client.query('SET LOCAL ROLE mcloud_query');
    const { rows } = await client.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM sensordata.reading_rollup_buckets) + (SELECT count(*) FROM sensordata.reading_rollup_marks) AS n',
    );
    assert.equal(Number(rows[0]?.n), 0);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
});

test('the materializer job on the job queue keeps recomputing dirty buckets', async () => {
  await freshClean();
  const errors: unknown[] = [];
  const queue = createJobQueue({ connectionString: database.url, pollIntervalMs: 50 });
  registerReadingRollupJob(queue, db, {
    intervalMs: 50,
    settleMs: 0,
    onError: (error) => errors.push(error),
  });
  await queue.start();
  try {
    await enqueueReadingRollups(db);
    await enqueueReadingRollups(db); // the job key keeps one pending job
    for (const at of [45, 46]) {
      await insertReadings(db, org, sources, inHour(at, 2, 9));
      const deadline = Date.now() + 15_000;
      while ((await rollupCounts(db)).marks > 0) {
        assert.ok(Date.now() < deadline, 'the job did not materialize within 15 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    assert.deepEqual(await exactCounts(), { n: 9, total: 41, max: 9 });
    const pending = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = 'reading-rollups'`,
    );
    assert.ok((pending.rows[0]?.n ?? 0) <= 2, 'one chain of jobs, not one per run');
  } finally {
    await queue.stop();
  }
  assert.deepEqual(errors, []);
});

test('a bucket still being written to waits for its settle time', async () => {
  await freshClean();
  await insertReadings(db, org, sources, inHour(47, 2, 3));
  const early = await materializeReadingRollups(db, signal, { settleMs: 60_000 });
  assert.deepEqual(early, { buckets: 0, marks: 0, ran: true });
  assert.deepEqual(await exactCounts(), { n: 7, total: 11, max: 3 });
  await db.query(`UPDATE reading_rollup_marks SET marked_at = marked_at - interval '61 seconds'`);
  const settled = await materializeReadingRollups(db, signal, { settleMs: 60_000 });
  assert.equal(settled.buckets, 1);
  assert.deepEqual(await exactCounts(), { n: 7, total: 11, max: 3 });
});
