/**
 * First-page latency of DataService.TabularDataByFilter over 1,000,000 readings.
 *
 *   node bench/tabular-first-page.ts [--readings 1000000] [--requests 200] [--warmup 30] [--profile]
 *
 * Loads readings with COPY through the same tables the ingest path writes (capture_sources rows made by
 * the ingest code's findOrCreateCaptureSource, month partitions by its ensureReadingPartitions), spread
 * over 8 sources and 6 months, VACUUM ANALYZE, then times sequential first-page requests (limit 50,
 * default sort) end to end over gRPC. The cloud runs in this process so the SQL the handler runs can be
 * captured (pg.Client.prototype.query is wrapped) and shown with EXPLAIN (ANALYZE, BUFFERS); the client
 * that times the requests runs in a child process (bench/lib/first-page-client.ts, a Connect client that
 * asks for gzip as Connect clients do by default), so its decoding does not share the server's event loop.
 *
 * --profile: CPU profile of this process (the server) during the timed requests, summarized into
 * results/tabular-first-page-profiled.json (not in the README).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { dataPb } from '@mcloud/protocol';
import pg from 'pg';
import { startCloud } from '../apps/cloud/src/cloud-app.ts';
import { loadCloudConfig } from '../apps/cloud/src/config/cloud-config.ts';
import { authenticate, benchClients, openPool } from './lib/clients.ts';
import { processTreeCpu } from './lib/cloud-process.ts';
import { applyServerExperiments } from './lib/experiments.ts';
import type { FirstPageRun, FirstPageTimings } from './lib/first-page-client.ts';
import { dayMs, loadReadings } from './lib/load-readings.ts';
import { type ProfileSummary, printProfile, summarizeProfile } from './lib/profile-summary.ts';
import { machineInfo, median, percentile, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    readings: { type: 'string', default: '1000000' },
    requests: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '30' },
    'server-nodelay': { type: 'boolean', default: false },
    'server-window': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
  },
});
const totalReadings = Number(args.readings);
const requestCount = Number(args.requests);
const warmupCount = Number(args.warmup);
const experiments = [
  ...(args['server-nodelay'] ? ['nodelay'] : []),
  ...(args['server-window'] ? ['window'] : []),
];
const experimentSuffix = `${experiments.map((e) => `-server-${e}`).join('')}${args.profile ? '-profiled' : ''}`;
const targetP50Ms = 5;

// ---------------------------------------------------------------------------------------------------
// SQL capture: every query any pg client runs while `capture` is set (the cloud shares this process).

interface CapturedQuery {
  text: string;
  values: unknown[];
  ms: number;
}
let capture: CapturedQuery[] | undefined;
type QueryFn = (...args: unknown[]) => unknown;
const originalQuery = pg.Client.prototype.query as unknown as QueryFn;
(pg.Client.prototype as unknown as { query: QueryFn }).query = function (
  this: pg.Client,
  ...queryArgs: unknown[]
) {
  const sink = capture;
  if (!sink) return originalQuery.apply(this, queryArgs);
  const [first, second] = queryArgs as [string | { text?: string; values?: unknown[] }, unknown];
  const text = typeof first === 'string' ? first : (first?.text ?? '');
  const values =
    (Array.isArray(second) ? second : typeof first === 'object' ? first?.values : undefined) ?? [];
  const began = performance.now();
  const record = () => sink.push({ text, values, ms: performance.now() - began });
  const callbackAt = queryArgs.findIndex((a) => typeof a === 'function');
  if (callbackAt >= 0) {
    const callback = queryArgs[callbackAt] as (...cbArgs: unknown[]) => void;
    queryArgs[callbackAt] = (...cbArgs: unknown[]) => {
      record();
      callback(...cbArgs);
    };
    return originalQuery.apply(this, queryArgs);
  }
  const result = originalQuery.apply(this, queryArgs);
  if (result && typeof (result as Promise<unknown>).then === 'function') {
    (result as Promise<unknown>).then(record, record);
  }
  return result;
};

// ---------------------------------------------------------------------------------------------------

applyServerExperiments(experiments);
const children: ChildProcess[] = [];
const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-bench-'));
const cloud = await startCloud(loadCloudConfig(['--port', '0', '--data-dir', dataDir], {}));
const bootstrap = cloud.bootstrap;
if (!bootstrap) throw new Error('a fresh data directory must bootstrap');
const pool = openPool((cloud.deps.db as pg.Pool).options.connectionString as string);

try {
  // --- Load -----------------------------------------------------------------------------------------
  const { loaded, partitions, sourceIds, startMs } = await loadReadings(pool, bootstrap, totalReadings);

  // --- Measure --------------------------------------------------------------------------------------
  const token = await authenticate(cloud.url, bootstrap);
  const { data } = benchClients(cloud.url, token);
  const weekStart = startMs + 90 * dayMs;
  const interval = { start: timestampFromMs(weekStart), end: timestampFromMs(weekStart + 7 * dayMs) };
  type FilterInit = MessageInitShape<typeof dataPb.FilterSchema>;
  const variants: { name: string; filter: FilterInit }[] = [
    { name: 'no filter', filter: {} },
    { name: 'component_name', filter: { componentName: 'sensor-2' } },
    { name: 'interval (1 week)', filter: { interval } },
    { name: 'component_name + interval', filter: { componentName: 'sensor-2', interval } },
  ];

  const client = await startTimingClient();
  const profiler = args.profile ? await startProfiler() : undefined;
  const variantResults = [];
  for (const variant of variants) {
    const request = { dataRequest: { filter: variant.filter, limit: 50n } };
    const encoded = toBinary(
      dataPb.TabularDataByFilterRequestSchema,
      create(dataPb.TabularDataByFilterRequestSchema, request),
    );
    capture = [];
    const cpuBefore = await cpuSplit(client.pid);
    const timings = await client.run({
      type: 'run',
      url: cloud.url,
      token,
      request: Buffer.from(encoded).toString('base64'),
      warmup: warmupCount,
      count: requestCount,
    });
    // Warm-up and timed requests alike run the same statements: SQL time per request is their mean.
    const sqlMsPerRequest = capture.reduce((sum, q) => sum + q.ms, 0) / (warmupCount + requestCount);
    const cpuAfter = await cpuSplit(client.pid);
    const cpuUsPerRequest = (key: keyof typeof cpuAfter) =>
      Math.round(((cpuAfter[key] - cpuBefore[key]) * 1e6) / (warmupCount + requestCount));
    capture = undefined;
    const latencies = timings.latencies;
    if (timings.rows !== 50) throw new Error(`${variant.name}: expected 50 rows, got ${timings.rows}`);
    // One more request to capture its SQL, then EXPLAIN ANALYZE each statement with the same parameters.
    capture = [];
    await data.tabularDataByFilter(request);
    const queries = capture.filter((q) => /^\s*(WITH|SELECT)/i.test(q.text));
    capture = undefined;
    const plans: { sql: string; params: unknown[]; plan: string[] }[] = [];
    for (const query of queries) {
      const explained = await pool.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) ${query.text}`,
        query.values,
      );
      plans.push({
        sql: query.text.replace(/\s+/g, ' ').trim(),
        params: query.values.map((v) => (Buffer.isBuffer(v) ? `\\x${v.toString('hex')}` : v)),
        plan: explained.rows.map((row) => row['QUERY PLAN']),
      });
    }
    const result = {
      name: variant.name,
      requests: requestCount,
      p50Ms: round(percentile(latencies, 50), 2),
      p95Ms: round(percentile(latencies, 95), 2),
      p99Ms: round(percentile(latencies, 99), 2),
      meanMs: round(latencies.reduce((a, b) => a + b, 0) / latencies.length, 2),
      sqlMeanMs: round(sqlMsPerRequest, 2),
      cpuUsPerRequest: {
        server: cpuUsPerRequest('server'),
        postgres: cpuUsPerRequest('postgres'),
        client: cpuUsPerRequest('client'),
      },
      statementsPerRequest: queries.length,
      plans,
    };
    variantResults.push(result);
    console.log(
      `\n${variant.name}: p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms, p99 ${result.p99Ms} ms (SQL round trips ${result.sqlMeanMs} ms per request over ${queries.length} statements; CPU per request: server ${result.cpuUsPerRequest.server} µs, PostgreSQL ${result.cpuUsPerRequest.postgres} µs, client ${result.cpuUsPerRequest.client} µs)`,
    );
    for (const plan of plans) {
      console.log(`  SQL: ${plan.sql.slice(0, 400)}${plan.sql.length > 400 ? '…' : ''}`);
      console.log(`  params: ${JSON.stringify(plan.params)}`);
      for (const line of plan.plan) console.log(`    ${line}`);
    }
  }

  await client.stop();
  const profile = profiler ? await profiler.stop() : undefined;
  if (profile) printProfile(profile);
  console.log('\nsummary (limit 50, default sort, sequential requests over gRPC/h2c):');
  for (const v of variantResults) {
    console.log(
      `  ${v.name.padEnd(28)} p50 ${v.p50Ms} ms  p95 ${v.p95Ms} ms  CPU/request server ${v.cpuUsPerRequest.server} µs, postgres ${v.cpuUsPerRequest.postgres} µs`,
    );
  }
  writeResult({
    name: `tabular-first-page${experimentSuffix}`,
    machine: machineInfo(),
    parameters: {
      readings: loaded,
      sources: sourceIds.length,
      partitions,
      requestsPerVariant: requestCount,
      warmupPerVariant: warmupCount,
      limit: 50,
      serverExperiments: experiments,
      client: 'Connect gRPC client (accepts gzip) in a child process; latency includes decoding',
      profiled: args.profile,
    },
    figures: [
      ...variantResults.map((v) => ({
        metric: `TabularDataByFilter first page (50), ${v.name}: p50 / p95`,
        value: `${v.p50Ms} ms / ${v.p95Ms} ms`,
        target: `p50 ≤ ${targetP50Ms} ms`,
        met: v.p50Ms <= targetP50Ms,
      })),
      {
        metric: 'CPU per first-page request, median over the variants: server Node / PostgreSQL / client',
        value: `${median(variantResults.map((v) => v.cpuUsPerRequest.server))} / ${median(variantResults.map((v) => v.cpuUsPerRequest.postgres))} / ${median(variantResults.map((v) => v.cpuUsPerRequest.client))} µs`,
      },
    ],
    variants: variantResults,
    ...(profile ? { profile } : {}),
  });
} finally {
  for (const child of children) child.kill();
  await pool.end();
  await cloud.stop();
  await rm(dataDir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------

/** CPU seconds so far: this process (the server), PostgreSQL (its other descendants) and the client. */
async function cpuSplit(clientPid: number): Promise<{ server: number; postgres: number; client: number }> {
  const [tree, client] = await Promise.all([processTreeCpu(process.pid), processTreeCpu(clientPid)]);
  return { server: tree.self, postgres: tree.descendants - client.self, client: client.self };
}

/** The timing client in a child process (killed in `finally` if the bench fails). */
async function startTimingClient(): Promise<{
  pid: number;
  run(run: FirstPageRun): Promise<FirstPageTimings>;
  stop(): Promise<void>;
}> {
  const child = fork(path.join(import.meta.dirname, 'lib', 'first-page-client.ts'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`timing client exited (code ${code})`))),
  );
  exited.catch(() => {});
  return {
    pid: child.pid as number,
    run(run) {
      const answered = new Promise<FirstPageTimings>((resolve, reject) =>
        child.once('message', (message: FirstPageTimings | { type: 'error'; message: string }) =>
          message.type === 'latencies' ? resolve(message) : reject(new Error(message.message)),
        ),
      );
      child.send(run);
      return Promise.race([answered, exited]);
    },
    async stop() {
      child.removeAllListeners('exit');
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'exit' });
      await gone;
    },
  };
}

/** Samples this process (the server) every 200 µs until `stop`, then summarizes the profile. */
async function startProfiler(): Promise<{ stop(): Promise<ProfileSummary> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      const file = path.join(dataDir, 'server.cpuprofile');
      await writeFile(file, JSON.stringify(profile));
      return summarizeProfile(file);
    },
  };
}
