import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { BSON } from 'bson';
import type { Principal } from '../../src/domain/auth/principal.ts';
import { createDataPipeline } from '../../src/domain/pipelines/data-pipelines.ts';
import { defaultPipelineRunLimits, executePipelineRun } from '../../src/domain/pipelines/pipeline-runner.ts';
import {
  defaultPipelineSchedulerSettings,
  runSchedulerPass,
} from '../../src/domain/pipelines/pipeline-scheduler.ts';
import { createPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// Scheduler pass + runner against the real database, with a moved clock and an in-memory job list.

let t: TestCloud;
let nowMs = Date.parse('2025-03-10T10:30:00Z');
const clock = { nowMs: () => nowMs };
const queued: string[] = [];

before(async () => {
  t = await startTestCloud();
  const part = await createPart(
    t.cloud,
    { organizationId: t.bootstrap.organization_id, locationId: t.bootstrap.location_id },
    { robotName: 'r' },
  );
  await seedReadings(t.cloud, part, { componentName: 'thermo' }, [
    { capturedAtMs: Date.parse('2025-03-10T10:10:00Z'), data: { readings: { temperature: 20 } } },
    { capturedAtMs: Date.parse('2025-03-10T10:50:00Z'), data: { readings: { temperature: 22 } } },
    { capturedAtMs: Date.parse('2025-03-10T11:10:00Z'), data: { readings: { temperature: 30 } } },
  ]);
});

after(async () => {
  await t?.stop();
});

test('a tick schedules the window once; the run writes its output with _viam_pipeline_run', async () => {
  const deps = {
    db: t.cloud.deps.db,
    clock,
    schedulerSettings: { ...defaultPipelineSchedulerSettings, runDelayMs: 0 },
    runLimits: defaultPipelineRunLimits,
    enqueueRun: async (_tx: unknown, runId: string) => {
      queued.push(runId);
    },
  };
  const id = await createDataPipeline({ db: deps.db, clock }, ownerPrincipal(t.bootstrap.organization_id), {
    organizationId: t.bootstrap.organization_id,
    name: 'hourly',
    stages: [
      BSON.serialize({ $group: { _id: null, n: { $sum: 1 }, avg: { $avg: '$data.readings.temperature' } } }),
    ],
    schedule: '0 * * * *',
    enableBackfill: false,
    dataSource: 'standard',
  });
  assert.equal((await runSchedulerPass(deps)).scheduled, 0);
  nowMs = Date.parse('2025-03-10T11:00:00Z');
  assert.equal((await runSchedulerPass(deps)).scheduled, 1);
  assert.equal((await runSchedulerPass(deps)).scheduled, 0, 'planned once');
  assert.equal(queued.length, 1);
  assert.equal(
    await executePipelineRun(deps, queued[0] as string, new AbortController().signal),
    'completed',
  );
  assert.equal(await executePipelineRun(deps, queued[0] as string, new AbortController().signal), 'skipped');
  const sink = await t.cloud.deps.db.query<{ doc: Record<string, unknown> }>(
    'SELECT doc FROM pipeline_sink WHERE pipeline_id = $1',
    [id],
  );
  assert.equal(sink.rows.length, 1);
  const doc = sink.rows[0]?.doc as Record<string, unknown>;
  assert.equal(doc.n, 2);
  assert.equal(doc.avg, 21);
  assert.deepEqual(doc._viam_pipeline_run, {
    id: queued[0],
    interval: { start: { $date: Date.parse('2025-03-10T10:00:00Z') }, end: { $date: nowMs } },
    organization_id: t.bootstrap.organization_id,
  });
  const runs = await t.cloud.deps.db.query(
    'SELECT status, output_documents FROM data_pipeline_runs WHERE pipeline_id = $1',
    [id],
  );
  assert.deepEqual(runs.rows, [{ status: 'completed', output_documents: 1 }]);
});

function ownerPrincipal(organizationId: string): Principal {
  return {
    kind: 'api-key',
    keyId: 'test',
    organizationId,
    grants: [{ role: 'owner', resourceType: 'organization', resourceId: organizationId, organizationId }],
  };
}
