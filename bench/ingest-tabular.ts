/**
 * Tabular ingest throughput: 8 concurrent clients send DataCaptureUpload (TABULAR_SENSOR, batches of
 * 100 sensor readings) to a cloud running in a child process with its own embedded PostgreSQL; in the
 * same run, the same rows go through a raw PostgreSQL COPY into the same partitioned `readings` table.
 *
 *   node bench/ingest-tabular.ts [--rounds 5] [--readings 200000] [--clients 8] [--batch 100] [--profile]
 *
 *   --server-nodelay, --server-window: experiments (lib/experiments.ts); results go to ingest-tabular-server-….json
 *   --profile: server CPU profile summary (results go to ingest-tabular[-…]-profiled.json, not the README)
 *
 * Requests are encoded before each round is timed and sent over bare HTTP/2 (gRPC framing), so the load
 * generator costs little CPU; the server does the full work (HTTP/2, auth, protobuf decode, ingest, SQL).
 * The raw COPY baseline is measured twice per round: text format (the reference the target names) and
 * binary format (what the ingest path itself sends since it moved to binary COPY). Per round it also
 * reports readings per transaction (group commit) and WAL bytes per reading, from PostgreSQL's statistics.
 *
 * Reading rollups (migration 0023): every ingest statement appends dirty marks in its transaction (a
 * statement trigger). Each round ingests twice, with the mark trigger enabled and disabled (A/B in one
 * session, alternating the order), so the marks' cost per reading is measured on the same machine load.
 * The COPY baselines run with the trigger disabled (the database's bare bulk path). The materializer is
 * kept off during the rounds (the benchmark holds its lock); its own cost is measured by query-mql.ts.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { create, fromBinary, type JsonObject, toBinary } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { dataSyncPb } from '@mcloud/protocol';
import { from as copyFrom } from 'pg-copy-streams';
import {
  binaryCopyHeader,
  binaryCopyTrailer,
  encodeReadingRows,
  readingCopyColumns,
} from '../apps/cloud/src/domain/data/ingest/reading-copy-rows.ts';
import { materializerLockKey } from '../apps/cloud/src/domain/data/rollups/reading-rollup-materializer.ts';
import {
  authenticate,
  createMachine,
  GrpcStatusError,
  grpcFrame,
  openPool,
  RawGrpcConnection,
} from './lib/clients.ts';
import { findProfile, processTreeCpu, removeDataDir, startCloudProcess } from './lib/cloud-process.ts';
import { sensorPayload } from './lib/load-readings.ts';
import { printProfile, summarizeProfile } from './lib/profile-summary.ts';
import { fmtInt, machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    readings: { type: 'string', default: '200000' },
    clients: { type: 'string', default: '8' },
    batch: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '20000' },
    profile: { type: 'boolean', default: false },
    'server-nodelay': { type: 'boolean', default: false },
    'server-window': { type: 'boolean', default: false },
  },
});
const rounds = Number(args.rounds);
const perRound = Number(args.readings);
const clientCount = Number(args.clients);
const batchSize = Number(args.batch);
const warmupReadings = Number(args.warmup);
const uploadPath = '/viam.app.datasync.v1.DataSyncService/DataCaptureUpload';

const experiments = [
  ...(args['server-nodelay'] ? ['nodelay'] : []),
  ...(args['server-window'] ? ['window'] : []),
];
const experimentSuffix = experiments.map((e) => `-server-${e}`).join('');
const targets = { readingsPerSecond: 50_000, ratioToCopy: 0.5 };

// ---------------------------------------------------------------------------------------------------
// Deterministic, realistic sensor readings.

let sequence = 0;
const startMs = Date.now() - 2 * 3600_000;

interface Reading {
  requestedMs: number;
  receivedMs: number;
  data: JsonObject;
}

function nextReading(): Reading {
  const n = sequence++;
  const requestedMs = startMs + n; // one reading per millisecond, all in the recent past
  return { requestedMs, receivedMs: requestedMs + 3, data: sensorPayload(n) };
}

interface RoundPlan {
  /** Per client: the framed DataCaptureUpload requests it sends, in order. */
  requests: Buffer[][];
  /** The same readings as COPY text rows, per component (source IDs resolved once known). */
  copyRows: { component: string; rows: string[] }[];
  /** The same readings again, for the binary COPY baseline. */
  binaryRows: { component: string; readings: Reading[]; syncedMs: number }[];
  readings: number;
}

function copyEscape(text: string): string {
  return text.replace(/\\/g, '\\\\');
}

function planRound(total: number, partId: string, organizationId: string): RoundPlan {
  const perClient = Math.ceil(total / clientCount);
  const requests: Buffer[][] = [];
  const copyRows: RoundPlan['copyRows'] = [];
  const binaryRows: RoundPlan['binaryRows'] = [];
  const syncedMs = Date.now();
  const syncedIso = new Date(syncedMs).toISOString();
  let made = 0;
  for (let c = 0; c < clientCount; c++) {
    const component = `sensor-${c + 1}`;
    const frames: Buffer[] = [];
    const rows: string[] = [];
    const all: Reading[] = [];
    for (let sent = 0; sent < perClient && made < total; ) {
      const count = Math.min(batchSize, perClient - sent, total - made);
      const readings = Array.from({ length: count }, nextReading);
      const request = create(dataSyncPb.DataCaptureUploadRequestSchema, {
        metadata: {
          partId,
          componentType: 'rdk:component:sensor',
          componentName: component,
          methodName: 'Readings',
          type: dataSyncPb.DataType.TABULAR_SENSOR,
          fileExtension: '.dat',
          tags: ['bench'],
        },
        sensorContents: readings.map((r) => ({
          metadata: {
            timeRequested: timestampFromMs(r.requestedMs),
            timeReceived: timestampFromMs(r.receivedMs),
          },
          data: { case: 'struct' as const, value: r.data },
        })),
      });
      frames.push(grpcFrame(toBinary(dataSyncPb.DataCaptureUploadRequestSchema, request)));
      all.push(...readings);
      for (const r of readings) {
        const json = JSON.stringify(r.data);
        const requested = new Date(r.requestedMs).toISOString();
        const received = new Date(r.receivedMs).toISOString();
        rows.push(
          `${organizationId}\t{SOURCE}\t${requested}\t${requested}\t${received}\t${syncedIso}\t${Buffer.byteLength(json)}\t${copyEscape(json)}\n`,
        );
      }
      sent += count;
      made += count;
    }
    requests.push(frames);
    copyRows.push({ component, rows });
    binaryRows.push({ component, readings: all, syncedMs });
  }
  return { requests, copyRows, binaryRows, readings: made };
}

// ---------------------------------------------------------------------------------------------------

const cloud = await startCloudProcess({ profile: args.profile, experiments });
const pool = openPool(cloud.databaseUrl);
let exitCode = 0;
try {
  const lockClient = await pool.connect();
  await lockClient.query('SELECT pg_advisory_lock($1)', [materializerLockKey]);
  const setMarks = async (on: boolean) => {
    await pool.query(
      `ALTER TABLE readings ${on ? 'ENABLE' : 'DISABLE'} TRIGGER readings_rollup_marks_insert`,
    );
  };
  const machine = await createMachine(pool, cloud.bootstrap, 'bench-ingest');
  const token = await authenticate(cloud.url, cloud.bootstrap);
  const connections = Array.from({ length: clientCount }, () => new RawGrpcConnection(cloud.url, token));

  // Feature probe: one request tells whether DataCaptureUpload is served yet.
  const probe = planRound(1, machine.partId, cloud.bootstrap.organization_id);
  try {
    const body = await (connections[0] as RawGrpcConnection).unary(
      uploadPath,
      probe.requests[0]?.[0] as Buffer,
    );
    const response = fromBinary(dataSyncPb.DataCaptureUploadResponseSchema, body);
    console.log(`probe: DataCaptureUpload ok (binary_data_id ${response.binaryDataId || '(empty)'})`);
  } catch (error) {
    if (error instanceof GrpcStatusError && error.code === 12) {
      console.log('DataCaptureUpload is not implemented by this cloud yet: nothing to measure.');
      exitCode = 2;
      throw error;
    }
    throw error;
  }

  async function ingest(plan: RoundPlan): Promise<number> {
    const began = performance.now();
    await Promise.all(
      plan.requests.map(async (frames, c) => {
        const connection = connections[c] as RawGrpcConnection;
        for (const frame of frames) await connection.unary(uploadPath, frame);
      }),
    );
    return (performance.now() - began) / 1000;
  }

  const sourceIds = new Map<string, string>();
  async function resolveSources(): Promise<void> {
    const found = await pool.query<{ component_name: string; id: string }>(
      'SELECT component_name, id::text AS id FROM capture_sources WHERE part_id = $1',
      [machine.partId],
    );
    for (const row of found.rows) sourceIds.set(row.component_name, row.id);
  }

  async function copy(plan: RoundPlan): Promise<number> {
    const chunks: Buffer[] = [];
    for (const { component, rows } of plan.copyRows) {
      const id = sourceIds.get(component);
      if (!id) throw new Error(`no capture source for ${component} (did ingest create it?)`);
      for (let i = 0; i < rows.length; i += 2000) {
        chunks.push(
          Buffer.from(
            rows
              .slice(i, i + 2000)
              .join('')
              .replaceAll('{SOURCE}', id),
          ),
        );
      }
    }
    const client = await pool.connect();
    try {
      const began = performance.now();
      await pipeline(
        Readable.from(chunks),
        client.query(
          copyFrom(
            'COPY readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data) FROM STDIN',
          ),
        ),
      );
      return (performance.now() - began) / 1000;
    } finally {
      client.release();
    }
  }

  /** The same rows in binary COPY format (the encoding the ingest path uses), one COPY on one connection. */
  async function copyBinary(plan: RoundPlan): Promise<number> {
    const chunks: Buffer[] = [binaryCopyHeader];
    for (const { component, readings, syncedMs } of plan.binaryRows) {
      const sourceId = sourceIds.get(component);
      if (!sourceId) throw new Error(`no capture source for ${component} (did ingest create it?)`);
      for (let i = 0; i < readings.length; i += 2000) {
        const slice = readings.slice(i, i + 2000);
        const json = Buffer.from(`[${slice.map((r) => JSON.stringify(r.data)).join(',')}]`);
        const payloadStarts = new Uint32Array(slice.length);
        const payloadEnds = new Uint32Array(slice.length);
        let offset = 1;
        slice.forEach((r, index) => {
          payloadStarts[index] = offset;
          offset += Buffer.byteLength(JSON.stringify(r.data));
          payloadEnds[index] = offset;
          offset += 1;
        });
        chunks.push(
          encodeReadingRows({
            organizationId: cloud.bootstrap.organization_id,
            sourceId,
            syncedMs,
            capturedUs: slice.map((r) => r.requestedMs * 1000),
            timeRequestedUs: slice.map((r) => r.requestedMs * 1000),
            timeReceivedUs: slice.map((r) => r.receivedMs * 1000),
            json,
            payloadStarts,
            payloadEnds,
          }),
        );
      }
    }
    chunks.push(binaryCopyTrailer);
    const client = await pool.connect();
    try {
      const began = performance.now();
      await pipeline(
        Readable.from(chunks),
        client.query(copyFrom(`COPY readings (${readingCopyColumns}) FROM STDIN (FORMAT binary)`)),
      );
      return (performance.now() - began) / 1000;
    } finally {
      client.release();
    }
  }

  /**
   * Transaction IDs assigned and WAL written so far, both exact at once (the cumulative statistics views
   * lag by up to seconds): every group commit is one writing transaction, one xid.
   */
  async function databaseCounters(): Promise<{ commits: number; walBytes: number }> {
    const result = await pool.query<{ xids: string; wal_bytes: string }>(
      `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xids,
              (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS wal_bytes`,
    );
    const row = result.rows[0];
    return { commits: Number(row?.xids ?? 0), walBytes: Number(row?.wal_bytes ?? 0) };
  }

  async function countReadings(): Promise<number> {
    const result = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM readings');
    return result.rows[0]?.n ?? 0;
  }

  console.log(`warm-up: ${fmtInt(warmupReadings)} readings through DataCaptureUpload`);
  await ingest(planRound(warmupReadings, machine.partId, cloud.bootstrap.organization_id));
  await resolveSources();

  const perRoundResults: {
    readings: number;
    ingestSeconds: number;
    ingestPerSecond: number;
    copySeconds: number;
    copyPerSecond: number;
    binaryCopySeconds: number;
    binaryCopyPerSecond: number;
    serverCpuSeconds: number;
    postgresCpuSeconds: number;
    copyPostgresCpuSeconds: number;
    binaryCopyPostgresCpuSeconds: number;
    readingsPerCommit: number;
    walBytesPerReading: number;
    noMarksIngestPerSecond: number;
    noMarksServerCpuSeconds: number;
    noMarksPostgresCpuSeconds: number;
  }[] = [];
  // One ingest of a fresh plan with the mark trigger on or off: readings/s and CPU.
  const ingestWith = async (marks: boolean) => {
    await setMarks(marks);
    const plan = planRound(perRound, machine.partId, cloud.bootstrap.organization_id);
    const countersBefore = await databaseCounters();
    const cpuBefore = await processTreeCpu(cloud.pid);
    const seconds = await ingest(plan);
    const cpuAfter = await processTreeCpu(cloud.pid);
    const countersAfter = await databaseCounters();
    return { plan, seconds, cpuBefore, cpuAfter, countersBefore, countersAfter };
  };
  let expected = await countReadings();
  for (let r = 1; r <= rounds; r++) {
    // A/B: with and without the rollup marks, the order alternating per round.
    const first = await ingestWith(r % 2 === 1);
    const second = await ingestWith(r % 2 === 0);
    const [marked, unmarked] = r % 2 === 1 ? [first, second] : [second, first];
    await setMarks(false); // the COPY baselines: the bare bulk path
    const { plan, countersBefore, countersAfter, cpuBefore } = marked;
    const ingestSeconds = marked.seconds;
    const cpuMiddle = marked.cpuAfter;
    expected += plan.readings + unmarked.plan.readings;
    const afterIngest = await countReadings();
    if (afterIngest !== expected)
      throw new Error(`round ${r}: expected ${expected} readings after ingest, found ${afterIngest}`);
    const cpuBeforeCopy = await processTreeCpu(cloud.pid);
    const copySeconds = await copy(plan);
    const cpuAfter = await processTreeCpu(cloud.pid);
    expected += plan.readings;
    const binaryCopySeconds = await copyBinary(plan);
    const cpuAfterBinary = await processTreeCpu(cloud.pid);
    expected += plan.readings;
    const commits = Math.max(1, countersAfter.commits - countersBefore.commits);
    const row = {
      readings: plan.readings,
      ingestSeconds: round(ingestSeconds, 3),
      ingestPerSecond: Math.round(plan.readings / ingestSeconds),
      copySeconds: round(copySeconds, 3),
      copyPerSecond: Math.round(plan.readings / copySeconds),
      serverCpuSeconds: round(cpuMiddle.self - cpuBefore.self, 2),
      postgresCpuSeconds: round(cpuMiddle.descendants - cpuBefore.descendants, 2),
      copyPostgresCpuSeconds: round(cpuAfter.descendants - cpuBeforeCopy.descendants, 2),
      binaryCopySeconds: round(binaryCopySeconds, 3),
      binaryCopyPerSecond: Math.round(plan.readings / binaryCopySeconds),
      binaryCopyPostgresCpuSeconds: round(cpuAfterBinary.descendants - cpuAfter.descendants, 2),
      readingsPerCommit: Math.round(plan.readings / commits),
      walBytesPerReading: Math.round((countersAfter.walBytes - countersBefore.walBytes) / plan.readings),
      noMarksIngestPerSecond: Math.round(unmarked.plan.readings / unmarked.seconds),
      noMarksServerCpuSeconds: round(unmarked.cpuAfter.self - unmarked.cpuBefore.self, 2),
      noMarksPostgresCpuSeconds: round(unmarked.cpuAfter.descendants - unmarked.cpuBefore.descendants, 2),
    };
    await setMarks(true);
    perRoundResults.push(row);
    console.log(
      `round ${r}: ingest ${fmtInt(row.ingestPerSecond)} readings/s (${row.ingestSeconds}s; server node CPU ${row.serverCpuSeconds}s, postgres CPU ${row.postgresCpuSeconds}s)` +
        ` | COPY ${fmtInt(row.copyPerSecond)} readings/s (${row.copySeconds}s; postgres CPU ${row.copyPostgresCpuSeconds}s)` +
        ` | binary COPY ${fmtInt(row.binaryCopyPerSecond)} readings/s (postgres CPU ${row.binaryCopyPostgresCpuSeconds}s)` +
        ` | ${row.readingsPerCommit} readings/commit, ${row.walBytesPerReading} WAL bytes/reading` +
        ` | without rollup marks ${fmtInt(row.noMarksIngestPerSecond)} readings/s (postgres CPU ${row.noMarksPostgresCpuSeconds}s)`,
    );
  }
  const total = await countReadings();
  if (total !== expected) throw new Error(`expected ${expected} readings in total, found ${total}`);
  for (const c of connections) c.close();
  lockClient.release();
  const noMarksMedian = median(perRoundResults.map((r) => r.noMarksIngestPerSecond));
  const noMarksPostgresCpuPerReadingUs = median(
    perRoundResults.map((r) => (r.noMarksPostgresCpuSeconds / r.readings) * 1e6),
  );

  const ingestMedian = median(perRoundResults.map((r) => r.ingestPerSecond));
  const copyMedian = median(perRoundResults.map((r) => r.copyPerSecond));
  const ratio = ingestMedian / copyMedian;
  const binaryCopyMedian = median(perRoundResults.map((r) => r.binaryCopyPerSecond));
  const binaryRatio = ingestMedian / binaryCopyMedian;
  const readingsPerCommit = median(perRoundResults.map((r) => r.readingsPerCommit));
  const walBytesPerReading = median(perRoundResults.map((r) => r.walBytesPerReading));
  const binaryCopyPostgresCpuPerReadingUs = median(
    perRoundResults.map((r) => (r.binaryCopyPostgresCpuSeconds / r.readings) * 1e6),
  );
  const serverCpuPerReadingUs = median(perRoundResults.map((r) => (r.serverCpuSeconds / r.readings) * 1e6));
  const postgresCpuPerReadingUs = median(
    perRoundResults.map((r) => (r.postgresCpuSeconds / r.readings) * 1e6),
  );
  const copyPostgresCpuPerReadingUs = median(
    perRoundResults.map((r) => (r.copyPostgresCpuSeconds / r.readings) * 1e6),
  );
  console.log(
    `\nDataCaptureUpload median: ${fmtInt(ingestMedian)} readings/s (target ≥ ${fmtInt(targets.readingsPerSecond)})`,
  );
  console.log(`raw COPY median:          ${fmtInt(copyMedian)} readings/s`);
  console.log(`raw binary COPY median:   ${fmtInt(binaryCopyMedian)} readings/s`);
  console.log(
    `ratio ingest / COPY:      ${ratio.toFixed(2)} (target ≥ ${targets.ratioToCopy}; to binary COPY ${binaryRatio.toFixed(2)})`,
  );
  console.log(
    `CPU per reading: server node ${serverCpuPerReadingUs.toFixed(1)} µs, postgres ${postgresCpuPerReadingUs.toFixed(1)} µs (COPY: postgres ${copyPostgresCpuPerReadingUs.toFixed(1)} µs, binary COPY ${binaryCopyPostgresCpuPerReadingUs.toFixed(1)} µs)`,
  );
  console.log(
    `group commit: ${readingsPerCommit} readings per transaction; ${walBytesPerReading} WAL bytes per reading`,
  );
  console.log(
    `rollup marks A/B: ${fmtInt(ingestMedian)} vs ${fmtInt(noMarksMedian)} readings/s without; postgres CPU ${postgresCpuPerReadingUs.toFixed(1)} vs ${noMarksPostgresCpuPerReadingUs.toFixed(1)} µs per reading`,
  );

  let profile: Awaited<ReturnType<typeof summarizeProfile>> | undefined;
  await pool.end();
  await cloud.stop();
  if (cloud.profileDir) {
    const file = await findProfile(cloud.profileDir);
    if (file) {
      profile = await summarizeProfile(file);
      printProfile(profile);
    }
    await removeDataDir(cloud.dataDir);
  }
  const result = {
    name: `ingest-tabular${experimentSuffix}${args.profile ? '-profiled' : ''}`,
    machine: machineInfo(),
    parameters: {
      rounds,
      readingsPerRound: perRound,
      clients: clientCount,
      batchSize,
      warmupReadings,
      profiled: args.profile,
    },
    figures: [
      {
        metric: `DataCaptureUpload, ${clientCount} clients × ${batchSize}-reading batches (median of ${rounds})`,
        value: `${fmtInt(ingestMedian)} readings/s`,
        target: `≥ ${fmtInt(targets.readingsPerSecond)} readings/s`,
        met: ingestMedian >= targets.readingsPerSecond,
      },
      { metric: 'raw COPY of the same rows, same table (median)', value: `${fmtInt(copyMedian)} readings/s` },
      {
        metric: 'raw binary COPY of the same rows (the format ingest sends; median), ingest / binary COPY',
        value: `${fmtInt(binaryCopyMedian)} readings/s, ${binaryRatio.toFixed(2)}`,
      },
      {
        metric: 'ingest / COPY',
        value: ratio.toFixed(2),
        target: `≥ ${targets.ratioToCopy}`,
        met: ratio >= targets.ratioToCopy,
      },
      {
        metric: 'CPU per ingested reading (server node / postgres)',
        value: `${serverCpuPerReadingUs.toFixed(1)} µs / ${postgresCpuPerReadingUs.toFixed(1)} µs`,
      },
      {
        metric:
          'rollup marks A/B in one session (mark trigger on / off): ingest readings/s, PostgreSQL CPU per reading (median)',
        value: `${fmtInt(ingestMedian)} / ${fmtInt(noMarksMedian)} readings/s; ${postgresCpuPerReadingUs.toFixed(1)} µs / ${noMarksPostgresCpuPerReadingUs.toFixed(1)} µs`,
      },
      {
        metric: 'PostgreSQL CPU per reading: raw COPY text / binary',
        value: `${copyPostgresCpuPerReadingUs.toFixed(1)} µs / ${binaryCopyPostgresCpuPerReadingUs.toFixed(1)} µs`,
      },
      {
        metric: 'ingest: readings per transaction (group commit), WAL bytes per reading (median)',
        value: `${fmtInt(readingsPerCommit)}, ${fmtInt(walBytesPerReading)} B`,
      },
    ],
    medians: {
      ingestReadingsPerSecond: ingestMedian,
      copyReadingsPerSecond: copyMedian,
      ratio: round(ratio, 3),
      serverCpuPerReadingUs: round(serverCpuPerReadingUs, 2),
      postgresCpuPerReadingUs: round(postgresCpuPerReadingUs, 2),
      copyPostgresCpuPerReadingUs: round(copyPostgresCpuPerReadingUs, 2),
      binaryCopyReadingsPerSecond: binaryCopyMedian,
      binaryRatio: round(binaryRatio, 3),
      binaryCopyPostgresCpuPerReadingUs: round(binaryCopyPostgresCpuPerReadingUs, 2),
      readingsPerCommit,
      walBytesPerReading,
      noMarksIngestReadingsPerSecond: noMarksMedian,
      noMarksPostgresCpuPerReadingUs: round(noMarksPostgresCpuPerReadingUs, 2),
    },
    rounds: perRoundResults,
    ...(profile ? { profile } : {}),
  };
  writeResult(result);
} catch (error) {
  await pool.end().catch(() => {});
  await cloud.stop().catch(() => {});
  if (exitCode === 0) {
    console.error(error);
    exitCode = 1;
  }
}
process.exitCode = exitCode;
