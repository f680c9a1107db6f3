/**
 * TabularDataBySQL overhead over 1,000,000 readings.
 *
 *   node bench/query-sql.ts [--readings 1000000] [--runs 9] [--warmup 2]
 *
 * Loads readings like tabular-first-page (bench/lib/load-readings.ts), then times each statement three
 * ways, interleaved run by run:
 *   - direct: the same (already rewritten) statement run by the superuser over a plain view that filters
 *     the organization by a literal, on one pooled `pg` client kept checked out (no transaction, no role,
 *     no LIMIT wrapper), every row received and parsed by `pg` as usual (timestamps → Date, jsonb →
 *     JSON.parse) — what a hand-written query costs an application;
 *   - directText: the same, rows as arrays of PostgreSQL's text (no parsing): the database and the socket
 *     alone, a lower bound shown for reference;
 *   - domain: tabularDataBySql in process (parse + admission + rewrite, READ ONLY transaction with the
 *     signed organization token under the mcloud_query role, the organization's view under row-level
 *     security (migration 0024), LIMIT cap, BSON);
 *   - rpc: DataService.TabularDataBySQL end to end over gRPC (h2c) with a bearer token (Connect's Node client
 *     offering gzip, so large responses are compressed; inflated in one pass, see `wideChunkGzip`);
 *     rpcIdentity: the same from a client without gzip.
 * The figure is the rpc median against the direct median (target: within 10 %).
 *
 * CPU per call is measured too, because on a shared machine wall time follows the load: the bench
 * process's own CPU (process.cpuUsage: the client, and for `domain`/`rpc` the in-process cloud) plus that of
 * every process it started (/proc: PostgreSQL's backends and parallel workers, the second cloud process),
 * summed over the measured runs of each way and divided by their number (/proc counts in 10 ms ticks, so
 * a call's figure is ±10 ms / runs). It includes whatever else those processes did meanwhile (autovacuum,
 * job polling), spread evenly over the ways by the interleaving.
 *
 * The gRPC clients open their HTTP/2 connection with a 4 MiB receive window (stream and connection;
 * `--client-window 0` keeps Node's 64 KiB default): grpc-go and the browsers grow their window to the
 * bandwidth-delay product, so a multi-MB response does not wait for ~45 WINDOW_UPDATE round trips there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import { syncBuiltinESMExports } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import zlib from 'node:zlib';
import { createClient } from '@connectrpc/connect';
import type { Compression } from '@connectrpc/connect/protocol';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { dataPb } from '@mcloud/protocol';
import type pg from 'pg';
import { startCloud } from '../apps/cloud/src/cloud-app.ts';
import { loadCloudConfig } from '../apps/cloud/src/config/cloud-config.ts';
import type { Principal } from '../apps/cloud/src/domain/auth/principal.ts';
import { rawTextTypes } from '../apps/cloud/src/domain/data/bson/bson-from-postgres.ts';
import { tabularDataBySql } from '../apps/cloud/src/domain/data/sql/tabular-data-by-sql.ts';
import { prepareUserSql } from '../apps/cloud/src/domain/data/sql/user-sql.ts';
import { authenticate, noDelayConnection, openPool } from './lib/clients.ts';
import { processTreeCpu, startCloudProcess } from './lib/cloud-process.ts';
import { dayMs, loadReadings } from './lib/load-readings.ts';
import { machineInfo, median, round, writeResult } from './lib/report.ts';
import { materializeEveryBucket } from './lib/rollups.ts';

const { values: args } = parseArgs({
  options: {
    readings: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '9' },
    warmup: { type: 'string', default: '2' },
    'client-window': { type: 'string', default: String(4 * 1024 * 1024) },
  },
});
const totalReadings = Number(args.readings);
const runs = Number(args.runs);
const warmup = Number(args.warmup);
const targetOverhead = 0.1;
const clientWindow = Number(args['client-window']);
if (clientWindow > 0) {
  // Connect's Node transport creates its sessions with http2.connect and offers no hook for the
  // connection-level window, so the bench widens it on every session it opens.
  const connectHttp2 = http2.connect;
  http2.connect = ((...connectArgs: Parameters<typeof http2.connect>) => {
    const session = connectHttp2(...connectArgs);
    session.once('connect', () => session.setLocalWindowSize(clientWindow));
    return session;
  }) as typeof http2.connect;
  syncBuiltinESMExports();
}
/**
 * gzip for the bench's clients that inflates in one pass: Connect's `compressionGzip` inflates with zlib's
 * default 16 KiB output chunks, each a hand-off to libuv's thread pool and back — ~180 of them for a
 * 2.9 MB response (14 ms instead of 2.2 ms in isolation, more on a busy machine). That is client-side
 * work a remote client (grpc-go inflates in-process, as a stream) does not pay in this process.
 */
const gzipAsync = promisify(zlib.gzip);
const gunzipAsync = promisify(zlib.gunzip);
const asBytes = (buffer: Buffer) =>
  new Uint8Array(buffer.buffer as ArrayBuffer, buffer.byteOffset, buffer.byteLength);
const wideChunkGzip: Compression = {
  name: 'gzip',
  compress: (bytes) => gzipAsync(bytes).then(asBytes),
  decompress: (bytes, readMaxBytes) =>
    bytes.length === 0
      ? Promise.resolve(new Uint8Array(0))
      : gunzipAsync(bytes, { chunkSize: 4 * 1024 * 1024, maxOutputLength: readMaxBytes }).then(asBytes),
};
const clientSettings = clientWindow > 0 ? { settings: { initialWindowSize: clientWindow } } : {};

const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-bench-'));
const cloud = await startCloud(loadCloudConfig(['--port', '0', '--data-dir', dataDir], {}));
const bootstrap = cloud.bootstrap;
if (!bootstrap) throw new Error('a fresh data directory must bootstrap');
const databaseUrl = (cloud.deps.db as pg.Pool).options.connectionString as string;
const pool = openPool(databaseUrl);
let replicaStop = async () => {};

try {
  const { loaded, startMs } = await loadReadings(pool, bootstrap, totalReadings);
  // Steady state: the rollup materializer has caught up with the bulk load, so its job does not take CPU
  // from timed runs (TabularDataBySQL never reads rollups).
  await materializeEveryBucket(cloud.deps.db, pool);
  const organizationId = bootstrap.organization_id;
  // The direct baseline: the view's columns without row-level security or the token check.
  await pool.query(`CREATE SCHEMA bench_direct;
    CREATE VIEW bench_direct.readings AS
    SELECT lpad(to_hex(floor(extract(epoch FROM r.captured_at))::bigint), 8, '0') || lpad(to_hex(r.id), 16, '0') AS _id,
      r.organization_id::text AS organization_id, s.location_id, s.robot_id::text AS robot_id,
      s.part_id::text AS part_id, s.component_type, s.component_name, s.method_name, r.time_requested,
      r.time_received, s.tags, s.method_parameters AS additional_parameters, r.data
    FROM public.readings r JOIN public.capture_sources s ON s.id = r.source_id AND s.organization_id = r.organization_id
    WHERE r.organization_id = '${organizationId}'`);

  const iso = (ms: number) => new Date(ms).toISOString();
  const day = startMs + 90 * dayMs;
  const statements = [
    {
      name: 'group by component over all readings',
      sql: `SELECT component_name, count(*) AS n, avg(data.readings.temperature) AS mean_t, max(data.readings.humidity) AS max_h
              FROM readings GROUP BY component_name ORDER BY component_name`,
    },
    {
      name: 'latest 100 of one sensor',
      sql: `SELECT time_received, data.readings.temperature AS t FROM readings
             WHERE component_name = 'sensor-2' ORDER BY time_received DESC LIMIT 100`,
    },
    {
      name: 'hourly average over one week',
      sql: `SELECT date_trunc('hour', time_received) AS hour, avg(data.readings.temperature) AS t FROM readings
             WHERE time_received >= CAST('${iso(day)}' AS TIMESTAMP) AND time_received < CAST('${iso(day + 7 * dayMs)}' AS TIMESTAMP)
             GROUP BY 1 ORDER BY 1`,
    },
    {
      name: 'one day of whole documents',
      sql: `SELECT * FROM sensorData.readings
             WHERE time_received >= CAST('${iso(day)}' AS TIMESTAMP) AND time_received < CAST('${iso(day + dayMs)}' AS TIMESTAMP)`,
    },
  ];

  // A second replica of the same database in its own process: its event loop is not the bench client's
  // (as PostgreSQL's is not, for the direct baseline), which is how clients reach a deployed cloud.
  const replica = await startCloudProcess({ databaseUrl });
  replicaStop = replica.stop;
  const token = await authenticate(cloud.url, bootstrap);
  // Connect's Node client offers gzip by default; `plain` offers no compression.
  const dataClient = (offerGzip: boolean, baseUrl = cloud.url) =>
    createClient(
      dataPb.DataService,
      createGrpcTransport({
        baseUrl,
        acceptCompression: offerGzip ? [wideChunkGzip] : [],
        interceptors: [
          (next) => (req) => {
            req.header.set('authorization', `Bearer ${token}`);
            return next(req);
          },
        ],
        nodeOptions: { ...noDelayConnection(baseUrl), ...clientSettings },
      }),
    );
  const data = dataClient(true);
  const plainData = dataClient(false);
  const replicaData = dataClient(true, replica.url);
  const principal: Principal = {
    kind: 'api-key',
    keyId: bootstrap.api_key_id,
    organizationId,
    grants: [{ role: 'owner', resourceType: 'organization', resourceId: organizationId, organizationId }],
  };
  const domainDeps = {
    db: cloud.deps.db,
    clock: cloud.deps.clock,
    queryLimits: cloud.deps.config.queryLimits,
  };
  const results = [];
  const directClient = await pool.connect();
  try {
    await directClient.query('SET search_path = bench_direct, pg_catalog; SET TimeZone = UTC');

    const time = async (work: () => Promise<number>) => {
      const tree = await processTreeCpu(process.pid);
      const cpu = process.cpuUsage();
      const began = performance.now();
      const rows = await work();
      const ms = performance.now() - began;
      const own = process.cpuUsage(cpu);
      const treeAfter = await processTreeCpu(process.pid);
      const cpuMs = (own.user + own.system) / 1000 + (treeAfter.descendants - tree.descendants) * 1000;
      return { ms, rows, cpuMs };
    };
    for (const statement of statements) {
      const prepared = await prepareUserSql(statement.sql, 'sql_query');
      const directSql = prepared.sql.replace(/\bsensordata\.readings\b/gi, 'readings');
      const ways = {
        // The baseline view is bench_direct.readings; the prepared text may name sensordata.readings.
        direct: async () => (await directClient.query(directSql)).rowCount ?? 0,
        directText: async () =>
          (
            await directClient.query({
              text: directSql,
              rowMode: 'array',
              types: rawTextTypes,
            } as pg.QueryConfig)
          ).rowCount ?? 0,
        domain: async () =>
          (
            await tabularDataBySql(
              domainDeps,
              principal,
              { organizationId, sqlQuery: statement.sql },
              AbortSignal.timeout(60_000),
            )
          ).length,
        rpc: async () =>
          (await data.tabularDataBySQL({ organizationId, sqlQuery: statement.sql })).rawData.length,
        // The same RPC from a client that does not offer gzip (grpc-go and grpclib do not by default;
        // Connect's Node client does, and the cloud then gzips large responses on its event loop).
        rpcIdentity: async () =>
          (await plainData.tabularDataBySQL({ organizationId, sqlQuery: statement.sql })).rawData.length,
        rpcProcess: async () =>
          (await replicaData.tabularDataBySQL({ organizationId, sqlQuery: statement.sql })).rawData.length,
      };
      const samples: Record<keyof typeof ways, number[]> = {
        direct: [],
        directText: [],
        domain: [],
        rpc: [],
        rpcIdentity: [],
        rpcProcess: [],
      };
      const cpuTotals: Record<keyof typeof ways, number> = {
        direct: 0,
        directText: 0,
        domain: 0,
        rpc: 0,
        rpcIdentity: 0,
        rpcProcess: 0,
      };
      const rowCounts = new Set<number>();
      for (let i = 0; i < warmup + runs; i++) {
        for (const way of Object.keys(ways) as (keyof typeof ways)[]) {
          const { ms, rows, cpuMs } = await time(ways[way]);
          rowCounts.add(rows);
          if (i >= warmup) {
            samples[way].push(ms);
            cpuTotals[way] += cpuMs;
          }
        }
      }
      const cpuPerCall = (way: keyof typeof ways) => round(cpuTotals[way] / runs, 1);
      if (rowCounts.size !== 1)
        throw new Error(`${statement.name}: the ways returned ${[...rowCounts]} rows`);
      const direct = median(samples.direct);
      const directText = median(samples.directText);
      const domain = median(samples.domain);
      const rpc = median(samples.rpc);
      const rpcIdentity = median(samples.rpcIdentity);
      const rpcProcess = median(samples.rpcProcess);
      const result = {
        name: statement.name,
        sql: statement.sql.replace(/\s+/g, ' '),
        rows: [...rowCounts][0],
        directMedianMs: round(direct),
        directTextMedianMs: round(directText),
        domainMedianMs: round(domain),
        rpcMedianMs: round(rpc),
        rpcIdentityMedianMs: round(rpcIdentity),
        rpcProcessMedianMs: round(rpcProcess),
        domainOverhead: round(domain / direct - 1, 3),
        rpcOverhead: round(rpc / direct - 1, 3),
        rpcIdentityOverhead: round(rpcIdentity / direct - 1, 3),
        rpcProcessOverhead: round(rpcProcess / direct - 1, 3),
        cpuMsPerCall: {
          direct: cpuPerCall('direct'),
          directText: cpuPerCall('directText'),
          domain: cpuPerCall('domain'),
          rpc: cpuPerCall('rpc'),
          rpcIdentity: cpuPerCall('rpcIdentity'),
          rpcProcess: cpuPerCall('rpcProcess'),
        },
        loadAverage1m: round(loadavg()[0] ?? 0, 2),
      };
      console.log(
        `${statement.name} (${result.rows} rows): direct ${result.directMedianMs} ms (text rows ${result.directTextMedianMs} ms), domain ${result.domainMedianMs} ms (${(result.domainOverhead * 100).toFixed(1)} %), rpc ${result.rpcMedianMs} ms (${(result.rpcOverhead * 100).toFixed(1)} %), rpc without gzip ${result.rpcIdentityMedianMs} ms (${(result.rpcIdentityOverhead * 100).toFixed(1)} %), rpc to a cloud in its own process ${result.rpcProcessMedianMs} ms (${(result.rpcProcessOverhead * 100).toFixed(1)} %); CPU per call ${JSON.stringify(result.cpuMsPerCall)} ms; load ${result.loadAverage1m}`,
      );
      results.push(result);
    }
  } finally {
    directClient.release();
  }

  const percent = (overhead: number) => `${overhead >= 0 ? '+' : ''}${round(overhead * 100, 1)} %`;
  writeResult({
    name: 'query-sql',
    machine: machineInfo(),
    parameters: { readings: loaded, runs, warmup },
    figures: results.map((r) => ({
      metric: `TabularDataBySQL vs the same statement run directly, ${r.name} (${r.rows} rows): median rpc to a cloud in its own process / direct`,
      value: `${r.rpcProcessMedianMs} ms / ${r.directMedianMs} ms (${percent(r.rpcProcessOverhead)}); cloud in the bench process ${r.rpcMedianMs} ms (${percent(r.rpcOverhead)}), client without gzip ${r.rpcIdentityMedianMs} ms (${percent(r.rpcIdentityOverhead)}); domain, no gRPC ${r.domainMedianMs} ms (${percent(r.domainOverhead)}); direct with unparsed text rows ${r.directTextMedianMs} ms. CPU per call (client + cloud + PostgreSQL): rpc to the cloud process ${r.cpuMsPerCall.rpcProcess} ms / direct ${r.cpuMsPerCall.direct} ms (${percent(r.cpuMsPerCall.rpcProcess / r.cpuMsPerCall.direct - 1)}), domain ${r.cpuMsPerCall.domain} ms; load ${r.loadAverage1m}`,
      target: `≤ +${targetOverhead * 100} %`,
      met: r.rpcProcessOverhead <= targetOverhead,
    })),
    statements: results,
  });
} finally {
  await pool.end();
  await replicaStop();
  await cloud.stop();
  await rm(dataDir, { recursive: true, force: true });
}
