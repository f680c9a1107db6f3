import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { BSON } from 'bson';
import { createCustomIndex } from '../../src/domain/data/indexes/custom-indexes.ts';
import { tabularDataByMql } from '../../src/domain/data/mql/tabular-data-by-mql.ts';
import { acquireQuerySlot } from '../../src/domain/data/query-access/query-gate.ts';
import {
  createDataPipeline,
  deleteDataPipeline,
  listDataPipelineRuns,
  setDataPipelineEnabled,
} from '../../src/domain/pipelines/data-pipelines.ts';
import { registerPipelineRunHandler } from '../../src/domain/pipelines/pipeline-jobs.ts';
import {
  compileRunQuery,
  defaultPipelineRunLimits,
  executePipelineRun,
  type PipelineRunLimits,
  pipelineQueryShare,
  type RunOutcome,
} from '../../src/domain/pipelines/pipeline-runner.ts';
import {
  defaultPipelineSchedulerSettings,
  type PipelineSchedulerSettings,
  runSchedulerPass,
} from '../../src/domain/pipelines/pipeline-scheduler.ts';
import type { JobHandler, JobQueue } from '../../src/infra/jobs/job-queue.ts';
import { eventually } from '../e2e/e2e-support.ts';
import { ownerOf } from '../support/owner-principal.ts';
import { createOrganization, createPart, type SeedPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { withPipelineScheduler } from './pipeline-fixtures.ts';

// Scheduler passes + runner against the real database, with a moved clock and an in-memory job list (the
// cloud's own scheduler loop is off: interval 0). The wiring through the job queue and several replicas is
// pipeline-replicas.test.ts.

let t: TestCloud;
let part: SeedPart;
let organizationId: string;
let nowMs = Date.parse('2025-03-10T10:30:00Z');
const clock = { nowMs: () => nowMs };
const queued: string[] = [];
let runLimits: PipelineRunLimits = defaultPipelineRunLimits;
let schedulerSettings: PipelineSchedulerSettings = { ...defaultPipelineSchedulerSettings, runDelayMs: 0 };
const hour = 3_600_000;
const at = (iso: string) => Date.parse(iso);
const signal = () => new AbortController().signal;

function deps() {
  return {
    db: t.cloud.deps.db,
    clock,
    schedulerSettings,
    runLimits,
    enqueueRun: async (_tx: unknown, runId: string) => {
      queued.push(runId);
    },
  };
}

const pass = () => runSchedulerPass(deps(), signal());

/** Executes every queued run (as the job queue would), oldest first. */
async function drain(): Promise<RunOutcome[]> {
  const outcomes: RunOutcome[] = [];
  for (let runId = queued.shift(); runId; runId = queued.shift()) {
    outcomes.push(await executePipelineRun(deps(), runId, signal()));
  }
  return outcomes;
}

const countStages = [BSON.serialize({ $group: { _id: null, n: { $sum: 1 } } })];

async function createPipeline(
  name: string,
  options: { stages?: Uint8Array[]; enableBackfill?: boolean; organization?: string } = {},
): Promise<string> {
  const organization = options.organization ?? organizationId;
  return createDataPipeline({ db: t.cloud.deps.db, clock }, ownerOf(organization), {
    organizationId: organization,
    name,
    stages: options.stages ?? countStages,
    schedule: '0 * * * *',
    enableBackfill: options.enableBackfill ?? false,
    dataSource: 'standard',
  });
}

interface RunRecord {
  id: string;
  start: string;
  status: string;
  reason: string;
  error: string;
  docs: number | null;
  superseded: boolean;
  attempt: number;
}

async function runsOf(pipelineId: string): Promise<RunRecord[]> {
  const result = await t.cloud.deps.db.query<{
    id: string;
    data_start: Date;
    status: string;
    reason: string;
    error_message: string;
    output_documents: number | null;
    superseded: boolean;
    attempt: number;
  }>(
    `SELECT id, data_start, status, reason, error_message, output_documents, superseded, attempt
     FROM data_pipeline_runs WHERE pipeline_id = $1 ORDER BY data_start, scheduled_at, status`,
    [pipelineId],
  );
  return result.rows.map((row) => ({
    id: row.id,
    start: row.data_start.toISOString(),
    status: row.status,
    reason: row.reason,
    error: row.error_message,
    docs: row.output_documents,
    superseded: row.superseded,
    attempt: row.attempt,
  }));
}

async function sinkOf(pipelineId: string): Promise<Record<string, unknown>[]> {
  const result = await t.cloud.deps.db.query<{ doc: Record<string, unknown> }>(
    'SELECT doc FROM pipeline_sink WHERE pipeline_id = $1 ORDER BY id',
    [pipelineId],
  );
  return result.rows.map((row) => row.doc);
}

function runOf(doc: Record<string, unknown> | undefined) {
  return doc?._viam_pipeline_run as {
    id: string;
    interval: { start: { $date: number }; end: { $date: number } };
    organization_id: string;
  };
}

async function cleanUp(pipelineId: string, organization = organizationId): Promise<void> {
  await deleteDataPipeline({ db: t.cloud.deps.db, clock }, ownerOf(organization), pipelineId);
  queued.length = 0;
  runLimits = defaultPipelineRunLimits;
  schedulerSettings = { ...defaultPipelineSchedulerSettings, runDelayMs: 0 };
}

before(async () => {
  t = await startTestCloud({ configure: withPipelineScheduler(0) });
  organizationId = t.bootstrap.organization_id;
  part = await createPart(
    t.cloud,
    { organizationId, locationId: t.bootstrap.location_id },
    { robotName: 'r' },
  );
  await seedReadings(t.cloud, part, { componentName: 'thermo' }, [
    { capturedAtMs: at('2025-03-10T10:10:00Z'), data: { readings: { temperature: 20 } } },
    { capturedAtMs: at('2025-03-10T10:50:00Z'), data: { readings: { temperature: 22 } } },
    { capturedAtMs: at('2025-03-10T11:10:00Z'), data: { readings: { temperature: 30 } } },
  ]);
});

after(async () => {
  await t?.stop();
});

test('a tick schedules the window once; the run writes its output with _viam_pipeline_run', async () => {
  nowMs = at('2025-03-10T10:30:00Z');
  const id = await createPipeline('hourly', {
    stages: [
      BSON.serialize({ $group: { _id: null, n: { $sum: 1 }, avg: { $avg: '$data.readings.temperature' } } }),
    ],
  });
  assert.equal((await pass()).scheduled, 0);
  nowMs = at('2025-03-10T11:00:00Z');
  assert.equal((await pass()).scheduled, 1);
  assert.equal((await pass()).scheduled, 0, 'planned once');
  assert.equal(queued.length, 1);
  const runId = queued[0] as string;
  assert.deepEqual(await drain(), ['completed']);
  assert.equal(await executePipelineRun(deps(), runId, signal()), 'skipped', 'a duplicate job does nothing');
  const sink = await sinkOf(id);
  assert.equal(sink.length, 1);
  const doc = sink[0] as Record<string, unknown>;
  assert.equal(doc.n, 2);
  assert.equal(doc.avg, 21);
  assert.deepEqual(doc._viam_pipeline_run, {
    id: runId,
    interval: { start: { $date: at('2025-03-10T10:00:00Z') }, end: { $date: nowMs } },
    organization_id: organizationId,
  });
  const runs = await runsOf(id);
  assert.deepEqual(
    runs.map((run) => [run.status, run.reason, run.docs]),
    [['completed', 'schedule', 1]],
  );
  const listed = await listDataPipelineRuns({ db: t.cloud.deps.db, clock }, ownerOf(organizationId), {
    id,
    pageSize: 0,
    pageToken: '',
  });
  assert.equal(listed.runs[0]?.status, 'completed');
  assert.equal(listed.runs[0]?.dataEndMs, nowMs);
  await cleanUp(id);
});

test('a window is [start, end): a reading at its start is in, one at its end belongs to the next window', async () => {
  await seedReadings(t.cloud, part, { componentName: 'edges' }, [
    { capturedAtMs: at('2025-03-21T12:00:00.000Z'), data: { readings: { edge: 'start' } } },
    { capturedAtMs: at('2025-03-21T12:59:59.999Z'), data: { readings: { edge: 'just before the end' } } },
    { capturedAtMs: at('2025-03-21T13:00:00.000Z'), data: { readings: { edge: 'end' } } },
  ]);
  nowMs = at('2025-03-21T12:30:00Z');
  const id = await createPipeline('edges', {
    stages: [
      BSON.serialize({ $match: { component_name: 'edges' } }),
      BSON.serialize({ $sort: { time_received: 1 } }),
      BSON.serialize({ $group: { _id: null, edges: { $push: '$data.readings.edge' } } }),
    ],
  });
  nowMs = at('2025-03-21T13:00:00Z');
  assert.equal((await pass()).scheduled, 1);
  nowMs = at('2025-03-21T14:00:00Z');
  assert.equal((await pass()).scheduled, 1);
  assert.deepEqual(await drain(), ['completed', 'completed']);
  const byWindow = (await sinkOf(id)).map((doc) => [
    new Date(runOf(doc).interval.start.$date).toISOString(),
    doc.edges,
  ]);
  assert.deepEqual(byWindow.sort(), [
    ['2025-03-21T12:00:00.000Z', ['start', 'just before the end']],
    ['2025-03-21T13:00:00.000Z', ['end']],
  ]);
  await cleanUp(id);
});

test('ListDataPipelineRuns pages through every run, newest window first, with page tokens', async () => {
  nowMs = at('2025-03-10T10:30:00Z');
  const id = await createPipeline('paged');
  for (let tick = 1; tick <= 7; tick += 1) {
    nowMs = at('2025-03-10T10:00:00Z') + tick * hour;
    assert.equal((await pass()).scheduled, 1);
  }
  const runDeps = { db: t.cloud.deps.db, clock };
  const pages: string[][] = [];
  let pageToken = '';
  do {
    const page = await listDataPipelineRuns(runDeps, ownerOf(organizationId), { id, pageSize: 3, pageToken });
    pages.push(page.runs.map((run) => new Date(run.dataStartMs).toISOString().slice(11, 16)));
    assert.ok(page.runs.every((run) => run.status === 'scheduled'));
    pageToken = page.nextPageToken;
  } while (pageToken !== '' && pages.length < 10);
  assert.deepEqual(pages, [['16:00', '15:00', '14:00'], ['13:00', '12:00', '11:00'], ['10:00']]);
  // Exactly a full last page: no further (empty) page is announced.
  const whole = await listDataPipelineRuns(runDeps, ownerOf(organizationId), {
    id,
    pageSize: 7,
    pageToken: '',
  });
  assert.equal(whole.runs.length, 7);
  assert.equal(whole.nextPageToken, '');
  await assert.rejects(
    listDataPipelineRuns(runDeps, ownerOf(organizationId), { id, pageSize: 1001, pageToken: '' }),
    /page_size: must be at most/,
  );
  await cleanUp(id);
});

test('a run left STARTED past the stale limit is failed and its window scheduled again', async () => {
  nowMs = at('2025-03-11T10:30:00Z');
  await seedReadings(t.cloud, part, { componentName: 'stale' }, [
    { capturedAtMs: at('2025-03-11T10:20:00Z'), data: { readings: { temperature: 1 } } },
  ]);
  const id = await createPipeline('stale');
  nowMs = at('2025-03-11T11:00:00Z');
  await pass();
  // A replica claims the run and dies: the job is gone with it, the run stays STARTED.
  const lost = queued.shift() as string;
  await t.cloud.deps.db.query(
    `UPDATE data_pipeline_runs SET status = 'started', started_at = $2 WHERE id = $1`,
    [lost, new Date(nowMs)],
  );
  nowMs += schedulerSettings.staleRunAfterMs - 1;
  assert.equal((await pass()).timedOut, 0, 'not stale yet');
  nowMs += 2;
  const result = await pass();
  assert.equal(result.timedOut, 1);
  assert.deepEqual(
    (await runsOf(id)).map((run) => run.status),
    ['failed'],
    'the retry waits for its backoff',
  );
  nowMs += schedulerSettings.retryBackoffMs;
  assert.equal((await pass()).retried, 1);
  let runs = await runsOf(id);
  assert.deepEqual(
    runs.map((run) => [run.status, run.reason]),
    [
      ['failed', 'schedule'],
      ['scheduled', 'retry'],
    ],
  );
  assert.match(runs[0]?.error ?? '', /did not finish within 600000 ms.*scheduled again/);
  assert.deepEqual(await drain(), ['completed']);
  runs = await runsOf(id);
  assert.equal(runs[1]?.status, 'completed');
  const sink = await sinkOf(id);
  assert.equal(sink.length, 1);
  assert.equal(sink[0]?.n, 1);
  assert.equal(runOf(sink[0]).id, runs[1]?.id);
  // The dead replica's job, if it ever ran, finds nothing to do.
  assert.equal(await executePipelineRun(deps(), lost, signal()), 'skipped');
  await cleanUp(id);
});

test('a transient failure is retried with backoff, each attempt recorded, then the window stays FAILED', async () => {
  nowMs = at('2025-03-18T10:30:00Z');
  await seedReadings(t.cloud, part, { componentName: 'transient' }, [
    { capturedAtMs: at('2025-03-18T10:20:00Z'), data: { readings: { temperature: 1 } } },
  ]);
  const id = await createPipeline('transient');
  // The pipeline runs' share of the query slots is taken (a backfill elsewhere): no slot within the time
  // budget is a failure that may pass.
  runLimits = { ...defaultPipelineRunLimits, runTimeoutMs: 50 };
  const share = { name: pipelineQueryShare, max: runLimits.querySlots };
  const held = await Promise.all(
    Array.from({ length: runLimits.querySlots }, () =>
      acquireQuerySlot(t.cloud.deps.db, 8, 1_000, signal(), share),
    ),
  );
  nowMs = at('2025-03-18T11:00:00Z');
  await pass();
  const backoff = schedulerSettings.retryBackoffMs;
  for (let attempt = 1; attempt <= 3; attempt++) {
    assert.deepEqual(await drain(), ['failed'], `attempt ${attempt}`);
    if (attempt < 3) {
      nowMs += backoff * 2 ** (attempt - 1) - 1;
      assert.equal((await pass()).retried, 0, `attempt ${attempt}: not before its backoff`);
      nowMs += 1;
      if (attempt === 1) {
        // A disabled pipeline's retry waits until it is enabled again.
        const service = { db: t.cloud.deps.db, clock };
        await setDataPipelineEnabled(service, ownerOf(organizationId), { id, enabled: false });
        assert.equal((await pass()).retried, 0, 'disabled: not retried');
        await setDataPipelineEnabled(service, ownerOf(organizationId), { id, enabled: true });
      }
      assert.equal((await pass()).retried, 1, `attempt ${attempt}: retried after its backoff`);
    } else {
      assert.deepEqual(await pass(), { scheduled: 0, timedOut: 0, retried: 0, givenUp: 1, lateData: 0 });
    }
  }
  const runs = await runsOf(id);
  assert.deepEqual(
    runs.map((run) => [run.status, run.reason, run.attempt]),
    [
      ['failed', 'schedule', 1],
      ['failed', 'retry', 2],
      ['failed', 'retry', 3],
    ],
  );
  assert.match(
    runs[0]?.error ?? '',
    /^too many pipeline-runs queries running at once \(limit 2 of 8\).* \(attempt 1 of 3; the window is scheduled again\)$/,
  );
  assert.match(runs[2]?.error ?? '', /\(attempt 3 of 3; not retried\)$/);
  // Nothing more happens to the window, however long it waits (until the next tick at 12:00).
  for (const release of held) release();
  nowMs = at('2025-03-18T11:59:00Z');
  await pass();
  assert.equal(queued.length, 0);
  assert.equal((await runsOf(id)).length, 3);
  const listed = await listDataPipelineRuns({ db: t.cloud.deps.db, clock }, ownerOf(organizationId), {
    id,
    pageSize: 10,
    pageToken: '',
  });
  assert.deepEqual(
    listed.runs.map((run) => [run.status, run.attempt]).sort((a, b) => Number(b[1]) - Number(a[1])),
    [
      ['failed', 3],
      ['failed', 2],
      ['failed', 1],
    ],
  );
  await cleanUp(id);
});

test('output with an array at a key of a unique sink index FAILS the run (not retried), nothing written', async () => {
  nowMs = at('2025-03-20T10:30:00Z');
  await seedReadings(t.cloud, part, { componentName: 'tagged' }, [
    { capturedAtMs: at('2025-03-20T10:20:00Z'), data: { readings: { temperature: 1 } } },
  ]);
  const id = await createPipeline('unique-sink', {
    stages: [BSON.serialize({ $group: { _id: null, names: { $push: '$component_name' }, n: { $sum: 1 } } })],
  });
  await createCustomIndex(
    { db: t.cloud.deps.db, clock },
    ownerOf(organizationId),
    { organizationId, collection: 'pipeline_sink', pipelineName: 'unique-sink' },
    [BSON.serialize({ keys: { names: 1 }, options: { unique: true } })],
    signal(),
  );
  nowMs = at('2025-03-20T11:00:00Z');
  await pass();
  assert.deepEqual(await drain(), ['failed']);
  const [run] = await runsOf(id);
  assert.equal(
    run?.error,
    'output: documents with an array at a key of unique index "names_1" (1 at names): MongoDB enforces a unique index per array element across documents, which a PostgreSQL index cannot, so they are refused — drop unique or index a path without arrays; nothing was written',
  );
  assert.deepEqual(await sinkOf(id), []);
  nowMs = at('2025-03-20T11:59:00Z');
  assert.equal((await pass()).retried, 0);
  assert.equal(queued.length, 0);
  await cleanUp(id);
});

test('late data re-runs a completed window and replaces its output', async () => {
  nowMs = at('2025-03-12T10:30:00Z');
  await seedReadings(t.cloud, part, { componentName: 'late' }, [
    { capturedAtMs: at('2025-03-12T10:10:00Z'), data: { readings: { temperature: 1 } } },
    { capturedAtMs: at('2025-03-12T10:20:00Z'), data: { readings: { temperature: 2 } } },
  ]);
  const id = await createPipeline('late');
  nowMs = at('2025-03-12T11:00:00Z');
  await pass();
  assert.deepEqual(await drain(), ['completed']);
  assert.equal((await sinkOf(id))[0]?.n, 2);
  nowMs = at('2025-03-12T11:04:00Z');
  assert.equal((await pass()).lateData, 0, 'nothing new yet');
  // A machine that was offline uploads a reading of 10:40 at 11:05.
  await seedReadings(t.cloud, part, { componentName: 'late' }, [
    {
      capturedAtMs: at('2025-03-12T10:40:00Z'),
      syncedAtMs: at('2025-03-12T11:05:00Z'),
      data: { readings: { temperature: 3 } },
    },
  ]);
  nowMs = at('2025-03-12T11:06:00Z');
  assert.equal((await pass()).lateData, 1);
  assert.equal((await pass()).lateData, 0, 'one pending re-run per window');
  assert.deepEqual(await drain(), ['completed']);
  const runs = await runsOf(id);
  assert.deepEqual(
    runs.map((run) => [run.status, run.reason, run.superseded]),
    [
      ['completed', 'schedule', true],
      ['completed', 'late-data', false],
    ],
  );
  const sink = await sinkOf(id);
  assert.equal(sink.length, 1, 'the re-run replaced the earlier output');
  assert.equal(sink[0]?.n, 3);
  assert.equal(runOf(sink[0]).id, runs[1]?.id);
  assert.equal((await pass()).lateData, 0, 'the re-run saw the late reading');
  await cleanUp(id);
});

test('windows missed while the pipeline was disabled are filled when it is enabled again', async () => {
  nowMs = at('2025-03-13T09:30:00Z');
  await seedReadings(t.cloud, part, { componentName: 'gap' }, [
    { capturedAtMs: at('2025-03-13T09:40:00Z'), data: { readings: { temperature: 1 } } },
    { capturedAtMs: at('2025-03-13T10:40:00Z'), data: { readings: { temperature: 2 } } },
    { capturedAtMs: at('2025-03-13T10:45:00Z'), data: { readings: { temperature: 2 } } },
    { capturedAtMs: at('2025-03-13T11:40:00Z'), data: { readings: { temperature: 3 } } },
  ]);
  const id = await createPipeline('gap');
  const service = { db: t.cloud.deps.db, clock };
  nowMs = at('2025-03-13T09:45:00Z');
  await setDataPipelineEnabled(service, ownerOf(organizationId), { id, enabled: false });
  nowMs = at('2025-03-13T12:30:00Z');
  await pass();
  assert.deepEqual(await runsOf(id), [], 'a disabled pipeline gets no runs');
  await setDataPipelineEnabled(service, ownerOf(organizationId), { id, enabled: true });
  await pass();
  assert.deepEqual(await drain(), ['completed', 'completed', 'completed']);
  const runs = await runsOf(id);
  assert.deepEqual(
    runs.map((run) => [run.start, run.reason, run.status]),
    [
      ['2025-03-13T09:00:00.000Z', 'missed', 'completed'],
      ['2025-03-13T10:00:00.000Z', 'missed', 'completed'],
      ['2025-03-13T11:00:00.000Z', 'schedule', 'completed'],
    ],
  );
  assert.deepEqual(
    (await sinkOf(id)).map((doc) => [runOf(doc).interval.start.$date, doc.n]),
    [
      [at('2025-03-13T09:00:00Z'), 1],
      [at('2025-03-13T10:00:00Z'), 2],
      [at('2025-03-13T11:00:00Z'), 1],
    ],
  );
  await cleanUp(id);
});

test("backfill processes the organization's past windows in batches", async () => {
  const other = await createOrganization(t.cloud, 'backfill');
  const otherPart = await createPart(
    t.cloud,
    { organizationId: other.organizationId, locationId: other.locationId },
    { robotName: 'b' },
  );
  await seedReadings(
    t.cloud,
    otherPart,
    { componentName: 'old' },
    [1, 2, 3, 4, 5].map((h) => ({
      capturedAtMs: at('2025-03-14T00:10:00Z') + h * hour,
      data: { readings: { temperature: h } },
    })),
  );
  nowMs = at('2025-03-14T06:30:00Z');
  schedulerSettings = { ...schedulerSettings, maxWindowsPerPass: 2 };
  const id = await createPipeline('backfill', { enableBackfill: true, organization: other.organizationId });
  assert.equal((await pass()).scheduled, 2);
  assert.equal((await pass()).scheduled, 2);
  assert.equal((await pass()).scheduled, 1);
  assert.equal((await pass()).scheduled, 0);
  assert.equal((await drain()).length, 5);
  const runs = await runsOf(id);
  assert.deepEqual(
    runs.map((run) => [run.start, run.reason, run.status]),
    [
      ['2025-03-14T01:00:00.000Z', 'backfill', 'completed'],
      ['2025-03-14T02:00:00.000Z', 'backfill', 'completed'],
      ['2025-03-14T03:00:00.000Z', 'backfill', 'completed'],
      ['2025-03-14T04:00:00.000Z', 'backfill', 'completed'],
      ['2025-03-14T05:00:00.000Z', 'schedule', 'completed'],
    ],
  );
  const sink = await sinkOf(id);
  assert.deepEqual(
    sink.map((doc) => [runOf(doc).interval.start.$date, doc.n, runOf(doc).organization_id]),
    [1, 2, 3, 4, 5].map((h) => [at('2025-03-14T00:00:00Z') + h * hour, 1, other.organizationId]),
  );
  await cleanUp(id, other.organizationId);
});

test('more output documents than the cap: the run FAILS with the limit and writes nothing', async () => {
  nowMs = at('2025-03-15T10:30:00Z');
  await seedReadings(
    t.cloud,
    part,
    { componentName: 'many' },
    [1, 2, 3, 4, 5].map((m) => ({
      capturedAtMs: at('2025-03-15T10:00:00Z') + m * 60_000,
      data: { readings: { temperature: m } },
    })),
  );
  const id = await createPipeline('many', {
    stages: [BSON.serialize({ $project: { _id: 0, t: '$data.readings.temperature' } })],
  });
  runLimits = { ...defaultPipelineRunLimits, maxOutputDocuments: 4 };
  nowMs = at('2025-03-15T11:00:00Z');
  await pass();
  assert.deepEqual(await drain(), ['failed']);
  const [run] = await runsOf(id);
  assert.equal(run?.status, 'failed');
  assert.match(run?.error ?? '', /^output: the run produced more than the limit of 4 documents per run/);
  assert.deepEqual(await sinkOf(id), []);
  // ListDataPipelineRuns reports the state, its error message and when the run started and ended.
  const [listed] = (
    await listDataPipelineRuns({ db: t.cloud.deps.db, clock }, ownerOf(organizationId), {
      id,
      pageSize: 0,
      pageToken: '',
    })
  ).runs;
  assert.equal(listed?.status, 'failed');
  assert.equal(listed?.errorMessage, run?.error);
  assert.ok(listed?.startedAtMs !== null && listed?.endedAtMs !== null, JSON.stringify(listed));
  // The same data gives the same answer: not retried.
  nowMs = at('2025-03-15T11:59:00Z');
  assert.equal((await pass()).retried, 0);
  assert.equal(queued.length, 0);
  // At the cap exactly, the run completes.
  runLimits = { ...defaultPipelineRunLimits, maxOutputDocuments: 5 };
  await t.cloud.deps.db.query(
    `INSERT INTO data_pipeline_runs (id, organization_id, pipeline_id, data_start, data_end, status, reason, scheduled_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, 'scheduled', 'retry', $4)`,
    [organizationId, id, new Date(at('2025-03-15T10:00:00Z')), new Date(nowMs)],
  );
  const retry = (await runsOf(id)).find((r) => r.status === 'scheduled');
  queued.push(retry?.id as string);
  assert.deepEqual(await drain(), ['completed']);
  assert.equal((await sinkOf(id)).length, 5);
  await cleanUp(id);
});

test('a run whose query exceeds the run time limit FAILS with the limit', async () => {
  nowMs = at('2025-03-16T10:30:00Z');
  const values = Array.from({ length: 40_000 }, (_, i) => i);
  await seedReadings(
    t.cloud,
    part,
    { componentName: 'slow' },
    [1, 2, 3, 4, 5, 6].map((m) => ({
      capturedAtMs: at('2025-03-16T10:00:00Z') + m * 60_000,
      data: { readings: { values } },
    })),
  );
  const id = await createPipeline('slow', {
    stages: [
      BSON.serialize({ $unwind: '$data.readings.values' }),
      BSON.serialize({ $group: { _id: { $mod: ['$data.readings.values', 7] }, s: { $sum: 1 } } }),
      BSON.serialize({ $sort: { s: -1 } }),
    ],
  });
  runLimits = { ...defaultPipelineRunLimits, runTimeoutMs: 2 };
  nowMs = at('2025-03-16T11:00:00Z');
  await pass();
  assert.deepEqual(await drain(), ['failed']);
  const [run] = await runsOf(id);
  assert.equal(run?.error, "run time: the pipeline's query did not finish within the limit of 2 ms per run");
  assert.deepEqual(await sinkOf(id), []);
  await cleanUp(id);
});

test('delete drops the pipeline, its runs and its output; its queued jobs do nothing', async () => {
  nowMs = at('2025-03-10T10:30:00Z');
  const id = await createPipeline('doomed');
  nowMs = at('2025-03-10T12:00:00Z');
  await pass();
  const [first, second] = queued.splice(0, 2);
  assert.equal(await executePipelineRun(deps(), first as string, signal()), 'completed');
  assert.equal((await sinkOf(id)).length, 1);
  await deleteDataPipeline({ db: t.cloud.deps.db, clock }, ownerOf(organizationId), id);
  assert.deepEqual(await runsOf(id), []);
  assert.deepEqual(await sinkOf(id), []);
  const left = await t.cloud.deps.db.query(
    'SELECT (SELECT count(*) FROM data_pipeline_runs WHERE pipeline_id = $1)::int AS runs, (SELECT count(*) FROM pipeline_sink WHERE pipeline_id = $1)::int AS docs',
    [id],
  );
  assert.deepEqual(left.rows[0], { runs: 0, docs: 0 });
  assert.equal(await executePipelineRun(deps(), second as string, signal()), 'skipped');
  queued.length = 0;
});

test('a run interrupted by a stopping cloud goes back to SCHEDULED and its job fails (to be retried)', async () => {
  nowMs = at('2025-03-10T10:30:00Z');
  const id = await createPipeline('interrupted');
  nowMs = at('2025-03-10T11:00:00Z');
  await pass();
  const runId = queued.shift() as string;
  const stopping = new AbortController();
  stopping.abort();
  await assert.rejects(executePipelineRun(deps(), runId, stopping.signal));
  assert.deepEqual(
    (await runsOf(id)).map((run) => run.status),
    ['scheduled'],
  );
  assert.equal(await executePipelineRun(deps(), runId, signal()), 'completed', 'the retried job runs it');
  await cleanUp(id);
});

test('beyond maxConcurrentRuns a pipeline-run job is put back in the queue instead of waiting', async () => {
  nowMs = at('2025-03-17T09:30:00Z');
  await seedReadings(t.cloud, part, { componentName: 'busy' }, [
    { capturedAtMs: at('2025-03-17T09:40:00Z'), data: { readings: { temperature: 1 } } },
    { capturedAtMs: at('2025-03-17T10:40:00Z'), data: { readings: { temperature: 2 } } },
  ]);
  const id = await createPipeline('busy');
  nowMs = at('2025-03-17T11:00:00Z');
  await pass();
  const [first, second] = queued.splice(0, 2) as [string, string];
  let handler: JobHandler | undefined;
  const queue: JobQueue = {
    register: (_name, registered) => {
      handler = registered;
    },
    start: async () => {},
    stop: async () => {},
  };
  registerPipelineRunHandler(queue, deps(), { maxConcurrentRuns: 1, onError: assert.fail });
  const context = (jobId: string) => ({ jobId, attempt: 1, maxAttempts: 25, signal: signal() });
  // Every query slot of the pool is taken, so the first run stays in progress until they are released.
  const slots = await Promise.all(
    Array.from({ length: 8 }, () => acquireQuerySlot(t.cloud.deps.db, 8, 1_000, signal())),
  );
  let firstDone = false;
  const firstJob = handler?.({ runId: first }, context('1')).then(() => {
    firstDone = true;
  });
  await handler?.({ runId: second }, context('2'));
  assert.equal(firstDone, false, 'the second job returned while the first run was still in progress');
  const requeued = await t.cloud.deps.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1',
    [`pipeline-run:${second}`],
  );
  assert.equal(requeued.rows[0]?.n, 1, 'the second run is back in the queue');
  for (const release of slots) release();
  await firstJob;
  // The put-back job is taken by the cloud's own job workers.
  await eventually(async () => {
    assert.deepEqual(
      (await runsOf(id)).map((run) => run.status),
      ['completed', 'completed'],
    );
  }, 20_000);
  await cleanUp(id);
});

test('a backfill holds at most its share of the query slots: interactive TabularDataByMQL still runs', async () => {
  nowMs = at('2025-03-19T00:30:00Z');
  const id = await createPipeline('backfill-share');
  const interactive = () =>
    tabularDataByMql(
      {
        db: t.cloud.deps.db,
        clock,
        queryLimits: { timeoutMs: 1_500, maxRows: 10, maxBytes: 1_000_000 },
      },
      ownerOf(organizationId),
      {
        organizationId,
        stages: [BSON.serialize({ $count: 'n' })],
        dataSource: { type: 'hot-storage' },
      },
      signal(),
    );
  /** Eight windows' runs at once, each blocked in its query on the readings while the lock is held. */
  async function backfillUnderLock(querySlots: number, whileBlocked: () => Promise<void>): Promise<void> {
    runLimits = { ...defaultPipelineRunLimits, querySlots };
    nowMs += 8 * hour;
    await pass();
    const runs = queued.splice(0, 8);
    assert.equal(runs.length, 8);
    const locker = await t.cloud.deps.db.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE public.readings IN ACCESS EXCLUSIVE MODE');
      const executing = runs.map((runId) => executePipelineRun(deps(), runId, signal()));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await whileBlocked();
      await locker.query('ROLLBACK');
      assert.deepEqual(await Promise.all(executing), Array(8).fill('completed'));
    } finally {
      locker.release();
    }
  }
  // Without a share (8 of 8), the backfill takes every slot: the interactive query waits out its budget.
  await backfillUnderLock(8, async () => {
    await assert.rejects(interactive(), /too many queries running at once \(limit 8\)/);
  });
  // With the default share (2 of 8), it runs at once while six runs wait for the share.
  await backfillUnderLock(defaultPipelineRunLimits.querySlots, async () => {
    const started = performance.now();
    // (No hot-storage documents here: $count answers no document, as in MongoDB.)
    assert.deepEqual(await interactive(), []);
    assert.ok(performance.now() - started < 1_000);
  });
  await cleanUp(id);
});

test("a run reads its window's partition only, not all of the organization's readings", async () => {
  // A reading in January: its month partition must not be scanned by a March window.
  await seedReadings(t.cloud, part, { componentName: 'january' }, [
    { capturedAtMs: at('2025-01-05T10:00:00Z'), data: { readings: { temperature: 5 } } },
  ]);
  const sql = compileRunQuery(countStages, 'standard', {
    start: new Date(at('2025-03-10T10:00:00Z')),
    end: new Date(at('2025-03-10T11:00:00Z')),
  });
  const plan = await t.cloud.deps.db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`);
  const text = JSON.stringify(plan.rows[0]?.['QUERY PLAN']);
  assert.match(text, /readings_y2025m03/);
  assert.doesNotMatch(text, /readings_y2025m01/);
  // The run still sees exactly its window (time_received), as the query role.
  nowMs = at('2025-03-10T10:30:00Z');
  const id = await createPipeline('pruned');
  nowMs = at('2025-03-10T11:00:00Z');
  await pass();
  assert.deepEqual(await drain(), ['completed']);
  assert.equal((await sinkOf(id))[0]?.n, 2);
  await cleanUp(id);
});
