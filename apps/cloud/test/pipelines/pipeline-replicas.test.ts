import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { BSON } from 'bson';
import { createDataPipeline } from '../../src/domain/pipelines/data-pipelines.ts';
import { eventually } from '../e2e/e2e-support.ts';
import { ownerOf } from '../support/owner-principal.ts';
import { createPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, startTestCloudReplica, type TestCloud } from '../support/test-cloud.ts';
import { withPipelineScheduler } from './pipeline-fixtures.ts';

// Two cloud replicas on one database, each with its scheduler loop (every 50 ms) and its job workers, and
// one injected clock moved minute by minute: every window of an every-minute pipeline runs exactly once
// through the Postgres job queue, whichever replica plans or executes it.

const minute = 60_000;
const base = Date.parse('2025-04-01T10:00:00Z');
let nowMs = base + 30_000;
const clock = { nowMs: () => nowMs };
let primary: TestCloud;
let replica: TestCloud;
let organizationId: string;
let pipelineId: string;

const configure = withPipelineScheduler(50);

before(async () => {
  primary = await startTestCloud({ clock, configure });
  replica = await startTestCloudReplica(primary, { clock, configure });
  organizationId = primary.bootstrap.organization_id;
  const part = await createPart(
    primary.cloud,
    { organizationId, locationId: primary.bootstrap.location_id },
    { robotName: 'r' },
  );
  // Minute m (0..19) holds m+1 readings with v = 1.
  await seedReadings(
    primary.cloud,
    part,
    { componentName: 'counter' },
    Array.from({ length: 20 }, (_, m) =>
      Array.from({ length: m + 1 }, (_, i) => ({
        capturedAtMs: base + m * minute + 1_000 + i * 100,
        data: { readings: { v: 1 } },
      })),
    ).flat(),
  );
  pipelineId = await createDataPipeline({ db: primary.cloud.deps.db, clock }, ownerOf(organizationId), {
    organizationId,
    name: 'every-minute',
    stages: [BSON.serialize({ $group: { _id: null, n: { $sum: '$data.readings.v' } } })],
    schedule: '* * * * *',
    enableBackfill: false,
    dataSource: 'standard',
  });
});

after(async () => {
  await replica?.stop();
  await primary?.stop();
});

interface WindowRuns {
  start: number;
  runs: number;
  completed: number;
  docs: number;
  n: number | null;
}

async function windows(): Promise<WindowRuns[]> {
  const result = await primary.cloud.deps.db.query<{
    data_start: Date;
    runs: number;
    completed: number;
    docs: number;
    n: number | null;
  }>(
    `SELECT r.data_start, count(*)::int AS runs, count(*) FILTER (WHERE r.status = 'completed')::int AS completed,
       (SELECT count(*) FROM pipeline_sink s WHERE s.run_id = ANY (array_agg(r.id)))::int AS docs,
       (SELECT max((s.doc ->> 'n')::int) FROM pipeline_sink s WHERE s.run_id = ANY (array_agg(r.id))) AS n
     FROM data_pipeline_runs r WHERE r.pipeline_id = $1 GROUP BY r.data_start ORDER BY r.data_start`,
    [pipelineId],
  );
  return result.rows.map((row) => ({
    start: row.data_start.getTime(),
    runs: row.runs,
    completed: row.completed,
    docs: row.docs,
    n: row.n,
  }));
}

const expected = (count: number): WindowRuns[] =>
  Array.from({ length: count }, (_, m) => ({
    start: base + m * minute,
    runs: 1,
    completed: 1,
    docs: 1,
    n: m + 1,
  }));

async function waitForCompleted(count: number): Promise<void> {
  await eventually(
    async () => {
      const seen = await windows();
      assert.equal(seen.filter((w) => w.completed === 1).length, count);
    },
    20_000,
    50,
  );
}

test('two replicas: each minute window runs exactly once through the job queue', async () => {
  for (let m = 1; m <= 8; m++) {
    nowMs = base + m * minute + 500;
    await waitForCompleted(m);
  }
  // The clock jumps 12 minutes at once: 12 windows planned in one or two passes, spread over both replicas.
  nowMs = base + 20 * minute + 500;
  await waitForCompleted(20);
  // A few more passes on both replicas change nothing.
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.deepEqual(await windows(), expected(20));
  const runs = await primary.cloud.deps.db.query<{ reason: string; n: number }>(
    `SELECT reason, count(*)::int AS n FROM data_pipeline_runs WHERE pipeline_id = $1 GROUP BY reason ORDER BY reason`,
    [pipelineId],
  );
  assert.deepEqual(runs.rows, [
    { reason: 'missed', n: 11 },
    { reason: 'schedule', n: 9 },
  ]);
  const jobs = await primary.cloud.deps.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = 'pipeline-run'`,
  );
  assert.equal(jobs.rows[0]?.n, 0, 'every pipeline-run job finished and was removed');
});
