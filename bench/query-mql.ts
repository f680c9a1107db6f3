/**
 * TabularDataByMQL: a $match + $group + $sort pipeline over 1,000,000 readings, three ways.
 *
 *   node bench/query-mql.ts [--readings 1000000] [--runs 7] [--mingo-runs 3]
 *
 * 1. MQL end to end: DataService.TabularDataByMQL over gRPC (compiled to one SQL statement, run as the
 *    organization's query role through the document view).
 * 2. The same pipeline in mingo over the same documents held in memory as JS objects (target: MQL ≥ 10×
 *    faster).
 * 3. A hand-written PostgreSQL query for the same result over the base tables (target: MQL within 1.5×).
 * Readings are loaded with COPY through the ingest path's tables (8 capture sources, month partitions).
 * The compiled SQL and both plans (EXPLAIN ANALYZE) are recorded.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { deserialize, serialize } from 'bson';
import { aggregate } from 'mingo';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { startCloud } from '../apps/cloud/src/cloud-app.ts';
import { loadCloudConfig } from '../apps/cloud/src/config/cloud-config.ts';
import { findOrCreateCaptureSource } from '../apps/cloud/src/domain/data/ingest/capture-sources.ts';
import {
  ensureReadingPartitions,
  monthIndexOf,
} from '../apps/cloud/src/domain/data/ingest/reading-partitions.ts';
import { compilePipeline, readingsSource } from '../apps/cloud/src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../apps/cloud/src/domain/data/mql/mql-values.ts';
import { runOrganizationQuery } from '../apps/cloud/src/domain/data/query-access/organization-query.ts';
import { authenticate, benchClients, createMachine, openPool } from './lib/clients.ts';
import { fmtInt, machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    readings: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '7' },
    'mingo-runs': { type: 'string', default: '3' },
  },
});
const totalReadings = Number(args.readings);
const runs = Number(args.runs);
const mingoRuns = Number(args['mingo-runs']);
const dayMs = 24 * 3600_000;

const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-bench-'));
const cloud = await startCloud(
  loadCloudConfig(['--port', '0', '--data-dir', dataDir, '--query-timeout-ms', '600000'], {}),
);
const bootstrap = cloud.bootstrap;
if (!bootstrap) throw new Error('a fresh data directory must bootstrap');
const pool = openPool((cloud.deps.db as pg.Pool).options.connectionString as string);

interface Source {
  id: string;
  robotId: string;
  partId: string;
  componentName: string;
}

try {
  // --- Load -----------------------------------------------------------------------------------------
  const loadBegan = performance.now();
  const machines = [
    await createMachine(pool, bootstrap, 'bench-rover-1'),
    await createMachine(pool, bootstrap, 'bench-rover-2'),
  ];
  const sources: Source[] = [];
  for (const machine of machines) {
    for (let s = 1; s <= 4; s++) {
      const componentName = `sensor-${s}`;
      const id = await findOrCreateCaptureSource(pool, {
        organizationId: bootstrap.organization_id,
        locationId: bootstrap.location_id,
        robotId: machine.robotId,
        partId: machine.partId,
        componentType: 'rdk:component:sensor',
        componentName,
        methodName: 'Readings',
        methodParameters: {},
        tags: [],
      });
      sources.push({ id, robotId: machine.robotId, partId: machine.partId, componentName });
    }
  }
  const endMs = Date.parse('2025-06-30T00:00:00Z');
  const startMs = endMs - 60 * dayMs;
  const stepMs = (endMs - startMs) / totalReadings;
  const months = new Set<number>();
  for (let t = startMs; t <= endMs + dayMs; t += dayMs) months.add(monthIndexOf(t));
  await ensureReadingPartitions(pool, months);

  const readingAt = (n: number) => {
    const phase = n / 1000;
    return {
      at: Math.floor(startMs + n * stepMs),
      source: sources[n % sources.length] as Source,
      data: {
        readings: {
          temperature: round(21 + 4 * Math.sin(phase), 3),
          humidity: round(45 + 10 * Math.cos(phase / 3), 3),
          co2_ppm: 400 + (n % 97),
          status: n % 500 === 0 ? 'warn' : 'ok',
        },
      },
    };
  };
  const syncedIso = new Date().toISOString();
  function* copyChunks(): Generator<Buffer> {
    let lines: string[] = [];
    for (let n = 0; n < totalReadings; n++) {
      const { at, source, data } = readingAt(n);
      const json = JSON.stringify(data);
      const iso = new Date(at).toISOString();
      lines.push(
        `${bootstrap?.organization_id}\t${source.id}\t${iso}\t${iso}\t${iso}\t${syncedIso}\t${json.length}\t${json}\n`,
      );
      if (lines.length === 5000) {
        yield Buffer.from(lines.join(''));
        lines = [];
      }
    }
    if (lines.length) yield Buffer.from(lines.join(''));
  }
  const client = await pool.connect();
  try {
    await pipeline(
      Readable.from(copyChunks()),
      client.query(
        copyFrom(
          'COPY readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data) FROM STDIN',
        ),
      ),
    );
  } finally {
    client.release();
  }
  await pool.query('VACUUM (ANALYZE) readings');
  await pool.query('ANALYZE capture_sources');
  console.log(
    `loaded ${fmtInt(totalReadings)} readings in ${((performance.now() - loadBegan) / 1000).toFixed(1)}s`,
  );

  // --- The pipeline -----------------------------------------------------------------------------------
  const from = new Date(startMs + 10 * dayMs);
  const to = new Date(startMs + 50 * dayMs);
  const stages = [
    {
      $match: {
        component_name: { $in: ['sensor-1', 'sensor-2', 'sensor-3'] },
        time_received: { $gte: from, $lt: to },
      },
    },
    {
      $group: {
        _id: '$component_name',
        avg_temperature: { $avg: '$data.readings.temperature' },
        max_humidity: { $max: '$data.readings.humidity' },
        n: { $sum: 1 },
      },
    },
    { $sort: { avg_temperature: -1 } },
  ];
  const handWritten = `
    SELECT s.component_name AS _id, avg((r.data->'readings'->>'temperature')::float8) AS avg_temperature,
           max((r.data->'readings'->>'humidity')::numeric) AS max_humidity, count(*) AS n
      FROM readings r JOIN capture_sources s ON s.id = r.source_id
     WHERE r.organization_id = $1 AND s.component_name IN ('sensor-1', 'sensor-2', 'sensor-3')
       AND r.time_received >= $2 AND r.time_received < $3
     GROUP BY s.component_name ORDER BY avg_temperature DESC`;
  const handParams = [bootstrap.organization_id, from, to];

  const token = await authenticate(cloud.url, bootstrap);
  const { data } = benchClients(cloud.url, token);
  const request = {
    organizationId: bootstrap.organization_id,
    mqlBinary: stages.map((stage) => serialize(stage)),
  };

  const mqlResult = (await data.tabularDataByMQL(request)).rawData.map((bytes) => deserialize(bytes));
  const handResult = (await pool.query(handWritten, handParams)).rows;
  assert.equal(mqlResult.length, handResult.length);
  for (const [i, row] of mqlResult.entries()) {
    const hand = handResult[i] as { _id: string; avg_temperature: number; max_humidity: string; n: string };
    assert.equal(row._id, hand._id);
    assert.ok(Math.abs(row.avg_temperature - hand.avg_temperature) < 1e-9);
    assert.equal(row.max_humidity, Number(hand.max_humidity));
    assert.equal(row.n, Number(hand.n));
  }
  console.log('MQL result (equals the hand-written query):', JSON.stringify(mqlResult));

  const compiled = compilePipeline(
    stages.map((stage, index) => decodeStage(serialize(stage), index)),
    readingsSource(),
  ).sql;
  const planOf = async (sql: string, params: unknown[], asQueryRole: boolean) => {
    const explainClient = await pool.connect();
    try {
      await explainClient.query('BEGIN READ ONLY');
      if (asQueryRole) {
        await explainClient.query(
          `SELECT set_config('mcloud.query_token', mcloud_private.organization_token($1), true)`,
          [bootstrap.organization_id],
        );
        await explainClient.query(
          `SET LOCAL search_path = sensordata, pg_catalog; SET LOCAL ROLE mcloud_query`,
        );
      }
      const result = await explainClient.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) ${sql}`,
        params,
      );
      return result.rows.map((row) => row['QUERY PLAN']);
    } finally {
      await explainClient.query('ROLLBACK');
      explainClient.release();
    }
  };
  // Every variant once per round, rounds repeated: the machine is shared, so variants measured in
  // separate blocks would see different loads.
  const once = async (sql: string, params: unknown[], setup: (c: pg.PoolClient) => Promise<void>) => {
    const timedClient = await pool.connect();
    try {
      await timedClient.query('BEGIN READ ONLY');
      await setup(timedClient);
      const began = performance.now();
      await timedClient.query(sql, params);
      const elapsed = performance.now() - began;
      await timedClient.query('ROLLBACK');
      return elapsed;
    } finally {
      timedClient.release();
    }
  };
  const asQueryRole = async (c: pg.PoolClient) => {
    await c.query(`SELECT set_config('mcloud.query_token', mcloud_private.organization_token($1), true)`, [
      bootstrap.organization_id,
    ]);
    await c.query('SET LOCAL search_path = sensordata, pg_catalog; SET LOCAL ROLE mcloud_query');
  };
  const serial = async (c: pg.PoolClient) => {
    await c.query('SET LOCAL max_parallel_workers_per_gather = 0');
  };
  const mqlMs: number[] = [];
  const handMs: number[] = [];
  const runQueryMs: number[] = [];
  const compiledDirectMs: number[] = [];
  const compiledSerialMs: number[] = [];
  const handSerialMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    let began = performance.now();
    await data.tabularDataByMQL(request);
    mqlMs.push(performance.now() - began);
    handMs.push(await once(handWritten, handParams, async () => {}));
    // The execution path of the RPC without gRPC: runOrganizationQuery (READ ONLY, role, cursor, BSON).
    began = performance.now();
    await runOrganizationQuery(
      { db: cloud.deps.db, clock: cloud.deps.clock },
      {
        organizationId: bootstrap.organization_id,
        sql: compiled,
        limits: cloud.deps.config.queryLimits,
        rowShape: 'json-document',
      },
      AbortSignal.timeout(600_000),
    );
    runQueryMs.push(performance.now() - began);
    // The compiled statement run directly (no cursor, so PostgreSQL may plan parallel workers), and both
    // statements without parallel workers (what a cursor, as runOrganizationQuery uses, gets).
    compiledDirectMs.push(await once(compiled, [], asQueryRole));
    compiledSerialMs.push(
      await once(compiled, [], async (c) => {
        await asQueryRole(c);
        await serial(c);
      }),
    );
    handSerialMs.push(await once(handWritten, handParams, serial));
  }
  console.log(`runOrganizationQuery (cursor) with the compiled SQL: median ${round(median(runQueryMs))} ms`);
  console.log(
    `compiled SQL run directly: median ${round(median(compiledDirectMs))} ms; without parallel workers ${round(median(compiledSerialMs))} ms`,
  );
  console.log(`hand-written SQL without parallel workers: median ${round(median(handSerialMs))} ms`);
  console.log(
    `MQL end to end: median ${round(median(mqlMs))} ms (${mqlMs.map((v) => round(v, 0)).join(', ')})`,
  );
  console.log(
    `hand-written SQL: median ${round(median(handMs))} ms (${handMs.map((v) => round(v, 0)).join(', ')})`,
  );

  const compiledPlan = await planOf(compiled, [], true);
  const handPlan = await planOf(handWritten, handParams, false);

  // --- mingo over the same documents in memory ---------------------------------------------------------
  const documents: Record<string, unknown>[] = [];
  for (let n = 0; n < totalReadings; n++) {
    const { at, source, data: payload } = readingAt(n);
    documents.push({
      _id: n,
      organization_id: bootstrap.organization_id,
      location_id: bootstrap.location_id,
      robot_id: source.robotId,
      part_id: source.partId,
      component_type: 'rdk:component:sensor',
      component_name: source.componentName,
      method_name: 'Readings',
      time_requested: new Date(at),
      time_received: new Date(at),
      tags: [],
      additional_parameters: {},
      data: payload,
    });
  }
  const mingoMs: number[] = [];
  let mingoResult: unknown[] = [];
  for (let i = 0; i < mingoRuns; i++) {
    const began = performance.now();
    mingoResult = aggregate(documents, stages);
    mingoMs.push(performance.now() - began);
  }
  assert.equal(mingoResult.length, mqlResult.length);
  console.log(
    `mingo in memory: median ${round(median(mingoMs))} ms (${mingoMs.map((v) => round(v, 0)).join(', ')})`,
  );

  const speedup = median(mingoMs) / median(mqlMs);
  const ratio = median(mqlMs) / median(handMs);
  console.log(`\nMQL vs mingo: ${round(speedup, 1)}× faster; MQL vs hand-written SQL: ${round(ratio, 2)}×`);
  console.log('\ncompiled SQL:', compiled);
  for (const line of compiledPlan) console.log(`  ${line}`);
  console.log('\nhand-written plan:');
  for (const line of handPlan) console.log(`  ${line}`);

  writeResult({
    name: `query-mql${totalReadings === 1_000_000 ? '' : `-${totalReadings}`}`,
    machine: machineInfo(),
    parameters: { readings: totalReadings, runs, mingoRuns, sources: sources.length, pipeline: stages },
    figures: [
      {
        metric: `MQL $match+$group+$sort over ${fmtInt(totalReadings)} readings, end to end (median)`,
        value: `${round(median(mqlMs), 1)} ms`,
      },
      {
        metric: 'same pipeline in mingo over the documents in memory (median)',
        value: `${round(median(mingoMs), 1)} ms (MQL ${round(speedup, 1)}× faster)`,
        target: 'MQL ≥ 10× faster',
        met: speedup >= 10,
      },
      {
        metric: 'hand-written PostgreSQL query for the same result (median)',
        value: `${round(median(handMs), 1)} ms (MQL ${round(ratio, 2)}×)`,
        target: 'MQL ≤ 1.5×',
        met: ratio <= 1.5,
      },
      {
        metric:
          'without parallel workers (user queries run through a cursor, which PostgreSQL never parallelizes): compiled SQL vs hand-written (median)',
        value: `${round(median(compiledSerialMs), 1)} ms vs ${round(median(handSerialMs), 1)} ms (${round(median(compiledSerialMs) / median(handSerialMs), 2)}×)`,
        target: '≤ 1.5×',
        met: median(compiledSerialMs) / median(handSerialMs) <= 1.5,
      },
      {
        metric:
          'compiled SQL through runOrganizationQuery (READ ONLY, query role, cursor, BSON), no gRPC (median)',
        value: `${round(median(runQueryMs), 1)} ms`,
      },
      {
        metric: 'compiled SQL run directly as the query role, parallel workers allowed (median)',
        value: `${round(median(compiledDirectMs), 1)} ms (${round(median(compiledDirectMs) / median(handMs), 2)}× hand-written)`,
      },
    ],
    samplesMs: {
      mql: mqlMs.map((v) => round(v, 1)),
      handWritten: handMs.map((v) => round(v, 1)),
      handWrittenSerial: handSerialMs.map((v) => round(v, 1)),
      compiledDirect: compiledDirectMs.map((v) => round(v, 1)),
      compiledSerial: compiledSerialMs.map((v) => round(v, 1)),
      runOrganizationQuery: runQueryMs.map((v) => round(v, 1)),
      mingo: mingoMs.map((v) => round(v, 1)),
    },
    compiledSql: compiled,
    compiledPlan,
    handWrittenSql: handWritten.replace(/\s+/g, ' ').trim(),
    handWrittenPlan: handPlan,
  });
} finally {
  await pool.end();
  await cloud.stop();
  await rm(dataDir, { recursive: true, force: true });
}
