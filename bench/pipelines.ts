/**
 * Data pipeline throughput over 1,000,000 readings.
 *
 *   node bench/pipelines.ts [--readings 1000000] [--rounds 3] [--hourly-days 30] [--daily-days 20]
 *
 * Loads readings like tabular-first-page (bench/lib/load-readings.ts: 8 sensors, 180 days, ~231 readings
 * per hour), starts the cloud in process with its scheduler loop off, and per round and variant creates a
 * fresh pipeline whose plan starts `days` back, then times one scheduler pass (plans every window, one
 * `pipeline-run` job each, in one transaction) until the cloud's own job workers (graphile-worker,
 * concurrency 8) have completed every run:
 *   - aggregate: `$match` (2 of 4 sensor names, half the readings) + `$group` by sensor (count, avg, min, max) over hourly
 *     windows — input readings per second (the readings inside the windows) and windows per second;
 *   - pass-through: `$project` of three fields over daily windows (~5,500 output documents per run, under
 *     the 10,000 cap) — output documents written to the sink per second.
 * Medians over the rounds are recorded.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BSON } from 'bson';
import type pg from 'pg';
import { startCloud } from '../apps/cloud/src/cloud-app.ts';
import { loadCloudConfig } from '../apps/cloud/src/config/cloud-config.ts';
import type { Principal } from '../apps/cloud/src/domain/auth/principal.ts';
import { createDataPipeline, deleteDataPipeline } from '../apps/cloud/src/domain/pipelines/data-pipelines.ts';
import { enqueuePipelineRun } from '../apps/cloud/src/domain/pipelines/pipeline-jobs.ts';
import { runSchedulerPass } from '../apps/cloud/src/domain/pipelines/pipeline-scheduler.ts';
import { openPool } from './lib/clients.ts';
import { dayMs, loadReadings } from './lib/load-readings.ts';
import { fmtInt, machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    readings: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '3' },
    'hourly-days': { type: 'string', default: '30' },
    'daily-days': { type: 'string', default: '20' },
  },
});
const totalReadings = Number(args.readings);
const rounds = Number(args.rounds);
const hour = 3_600_000;

const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-bench-'));
const cloud = await startCloud(
  loadCloudConfig(['--port', '0', '--data-dir', dataDir, '--pipeline-scheduler-interval-ms', '0'], {}),
);
const bootstrap = cloud.bootstrap;
if (!bootstrap) throw new Error('a fresh data directory must bootstrap');
const pool = openPool((cloud.deps.db as pg.Pool).options.connectionString as string);

interface Variant {
  name: string;
  schedule: string;
  windowMs: number;
  days: number;
  stages: Record<string, unknown>[];
}

const variants: Variant[] = [
  {
    name: 'aggregate',
    schedule: '0 * * * *',
    windowMs: hour,
    days: Number(args['hourly-days']),
    stages: [
      { $match: { component_name: { $in: ['sensor-1', 'sensor-2'] } } },
      {
        $group: {
          _id: '$component_name',
          n: { $sum: 1 },
          mean: { $avg: '$data.readings.temperature' },
          low: { $min: '$data.readings.temperature' },
          high: { $max: '$data.readings.temperature' },
        },
      },
    ],
  },
  {
    name: 'pass-through',
    schedule: '0 0 * * *',
    windowMs: dayMs,
    days: Number(args['daily-days']),
    stages: [
      {
        $project: {
          _id: 0,
          sensor: '$component_name',
          t: '$data.readings.temperature',
          at: '$time_received',
        },
      },
    ],
  },
];

interface RoundResult {
  ms: number;
  windows: number;
  inputReadings: number;
  outputDocuments: number;
}

try {
  const { loaded } = await loadReadings(pool, bootstrap, totalReadings);
  const organizationId = bootstrap.organization_id;
  const principal: Principal = {
    kind: 'api-key',
    keyId: bootstrap.api_key_id,
    organizationId,
    grants: [{ role: 'owner', resourceType: 'organization', resourceId: organizationId, organizationId }],
  };
  const service = { db: cloud.deps.db, clock: cloud.deps.clock };
  const nowMs = Date.now();

  const runRound = async (variant: Variant, round: number): Promise<RoundResult> => {
    const id = await createDataPipeline(service, principal, {
      organizationId,
      name: `${variant.name}-${round}`,
      stages: variant.stages.map((stage) => BSON.serialize(stage)),
      schedule: variant.schedule,
      enableBackfill: false,
      dataSource: 'standard',
    });
    // Plan from `days` back (aligned to the window): every window since then is due at once.
    const fromMs = Math.floor((nowMs - variant.days * dayMs) / variant.windowMs) * variant.windowMs;
    await pool.query('UPDATE data_pipelines SET planned_until = $2 WHERE id = $1', [id, new Date(fromMs)]);
    const windows = Math.floor((nowMs - fromMs) / variant.windowMs);
    const input = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM readings WHERE organization_id = $1 AND time_received >= $2 AND time_received < $3`,
      [organizationId, new Date(fromMs), new Date(fromMs + windows * variant.windowMs)],
    );
    const began = performance.now();
    const pass = await runSchedulerPass(
      {
        db: cloud.deps.db,
        clock: cloud.deps.clock,
        schedulerSettings: {
          ...cloud.deps.config.pipelines.scheduler,
          runDelayMs: 0,
          maxWindowsPerPass: windows + 1,
        },
        enqueueRun: enqueuePipelineRun,
      },
      AbortSignal.timeout(60_000),
    );
    if (pass.scheduled !== windows) throw new Error(`planned ${pass.scheduled} windows, expected ${windows}`);
    for (;;) {
      const state = await pool.query<{ open: number; failed: number }>(
        `SELECT count(*) FILTER (WHERE status IN ('scheduled', 'started'))::int AS open,
                count(*) FILTER (WHERE status = 'failed')::int AS failed
         FROM data_pipeline_runs WHERE pipeline_id = $1`,
        [id],
      );
      if (state.rows[0]?.failed) throw new Error(`${variant.name}: ${state.rows[0].failed} runs failed`);
      if (state.rows[0]?.open === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ms = performance.now() - began;
    const output = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pipeline_sink WHERE pipeline_id = $1',
      [id],
    );
    await deleteDataPipeline(service, principal, id);
    return { ms, windows, inputReadings: input.rows[0]?.n ?? 0, outputDocuments: output.rows[0]?.n ?? 0 };
  };

  const results = [];
  for (const variant of variants) {
    const samples: RoundResult[] = [];
    for (let r = 0; r < rounds; r++) {
      const sample = await runRound(variant, r);
      console.log(
        `${variant.name} round ${r + 1}: ${sample.windows} windows, ${fmtInt(sample.inputReadings)} readings in, ${fmtInt(sample.outputDocuments)} documents out, ${round(sample.ms)} ms`,
      );
      samples.push(sample);
    }
    const ms = median(samples.map((s) => s.ms));
    const first = samples[0] as RoundResult;
    results.push({
      name: variant.name,
      schedule: variant.schedule,
      stages: variant.stages,
      windows: first.windows,
      inputReadings: first.inputReadings,
      outputDocuments: first.outputDocuments,
      medianMs: round(ms),
      roundsMs: samples.map((s) => round(s.ms)),
      inputReadingsPerSecond: Math.round(first.inputReadings / (ms / 1000)),
      outputDocumentsPerSecond: Math.round(first.outputDocuments / (ms / 1000)),
      windowsPerSecond: round(first.windows / (ms / 1000), 1),
    });
  }
  const [aggregate, passThrough] = results as [(typeof results)[0], (typeof results)[0]];
  console.log(
    `aggregate: ${fmtInt(aggregate.inputReadingsPerSecond)} readings/s in, ${aggregate.windowsPerSecond} windows/s; pass-through: ${fmtInt(passThrough.outputDocumentsPerSecond)} documents/s out`,
  );

  writeResult({
    name: 'pipelines',
    machine: machineInfo(),
    parameters: { readings: loaded, rounds, hourlyDays: variants[0]?.days, dailyDays: variants[1]?.days },
    figures: [
      {
        metric: `$match+$group over ${aggregate.windows} hourly windows (${fmtInt(aggregate.inputReadings)} readings), scheduler pass → all runs COMPLETED via the job queue (median of ${rounds})`,
        value: `${fmtInt(aggregate.inputReadingsPerSecond)} readings/s (${aggregate.windowsPerSecond} windows/s, ${aggregate.medianMs} ms)`,
      },
      {
        metric: `$project pass-through over ${passThrough.windows} daily windows, ${fmtInt(passThrough.outputDocuments)} documents written to the sink (median of ${rounds})`,
        value: `${fmtInt(passThrough.outputDocumentsPerSecond)} documents/s (${passThrough.medianMs} ms)`,
      },
    ],
    variants: results,
  });
} finally {
  await pool.end();
  await cloud.stop();
  await rm(dataDir, { recursive: true, force: true });
}
