/**
 * Client-streaming FileUpload of a 100 MiB file in 64 KiB chunks to a cloud in a child process (filesystem
 * blob store), against a disk copy of the same amount in the same run. The gRPC frames are encoded before
 * the clock starts and written on bare HTTP/2 with flow control, so on 2 cores the load generator leaves
 * the CPU to the server being measured.
 *
 *   node bench/streaming-upload.ts [--mib 100] [--runs 5] [--server-nodelay]
 *
 * Memory: the server's VmRSS is sampled every 20 ms from /proc/<pid>/status; growth = peak during the
 * upload − RSS just before it (after a 1 MiB warm-up upload). PostgreSQL runs in separate processes and
 * is not included; the load generator is this process and is not included either. After each upload the
 * server runs a full GC (it is started with --expose-gc) and its RSS is read again, which separates
 * memory the upload retained from garbage V8 had not collected yet (64 KiB chunks are off-heap Buffers).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { create, fromBinary, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { dataSyncPb } from '@mcloud/protocol';
import { authenticate, createMachine, grpcFrame, openPool, RawGrpcConnection } from './lib/clients.ts';
import {
  findProfile,
  processMemory,
  processTreeCpu,
  removeDataDir,
  startCloudProcess,
} from './lib/cloud-process.ts';
import { printProfile, summarizeProfile } from './lib/profile-summary.ts';
import { machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    mib: { type: 'string', default: '100' },
    runs: { type: 'string', default: '5' },
    'server-nodelay': { type: 'boolean', default: false },
    'server-window': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
  },
});
const fileMiB = Number(args.mib);
const runs = Number(args.runs);
const chunkBytes = 64 * 1024;
const totalBytes = fileMiB * 1024 * 1024;
const mib = 1024 * 1024;
const experiments = [
  ...(args['server-nodelay'] ? ['nodelay'] : []),
  ...(args['server-window'] ? ['window'] : []),
];
const experimentSuffix = experiments.map((e) => `-server-${e}`).join('');
const targets = { memoryGrowthMiB: 50, ratioToDisk: 0.5 };

// Chunks: slices of a random pool at shifting offsets, stamped with their index, so no two are equal.
const randomPool = randomBytes(4 * mib);
function chunkAt(index: number, size: number): Buffer {
  const chunk = Buffer.allocUnsafe(size);
  const offset = (index * 7919 * 8) % (randomPool.length - size);
  randomPool.copy(chunk, 0, offset, offset + size);
  if (size >= 8) chunk.writeDoubleLE(index, 0);
  return chunk;
}
function* fileChunks(bytes: number): Generator<Buffer> {
  for (let index = 0, sent = 0; sent < bytes; index++) {
    const size = Math.min(chunkBytes, bytes - sent);
    yield chunkAt(index, size);
    sent += size;
  }
}

type UploadRequest = MessageInitShape<typeof dataSyncPb.FileUploadRequestSchema>;

const scratch = await mkdtemp(path.join(tmpdir(), 'mcloud-bench-disk-'));
const cloud = await startCloudProcess({ experiments, exposeGc: true, profile: args.profile });
const pool = openPool(cloud.databaseUrl, 2);
try {
  const machine = await createMachine(pool, cloud.bootstrap, 'bench-uploader');
  const token = await authenticate(cloud.url, cloud.bootstrap);

  const connection = new RawGrpcConnection(cloud.url, token);
  /** The whole upload as gRPC frames, encoded before the clock starts (the client stays cheap). */
  function uploadFrames(bytes: number, name: string): Buffer[] {
    const metadata: UploadRequest = {
      uploadPacket: {
        case: 'metadata',
        value: {
          partId: machine.partId,
          componentType: 'rdk:component:camera',
          componentName: 'camera-1',
          methodName: 'NextPointCloud',
          type: dataSyncPb.DataType.FILE,
          fileName: name,
          fileExtension: '.bin',
          tags: ['bench'],
        },
      },
    };
    const encode = (request: UploadRequest) =>
      grpcFrame(
        toBinary(dataSyncPb.FileUploadRequestSchema, create(dataSyncPb.FileUploadRequestSchema, request)),
      );
    const frames = [encode(metadata)];
    for (const chunk of fileChunks(bytes)) {
      frames.push(encode({ uploadPacket: { case: 'fileContents', value: { data: chunk } } }));
    }
    return frames;
  }
  async function send(frames: Buffer[]): Promise<string> {
    const response = await connection.clientStream(
      '/viam.app.datasync.v1.DataSyncService/FileUpload',
      frames,
    );
    return fromBinary(dataSyncPb.FileUploadResponseSchema, response).binaryDataId;
  }
  async function upload(bytes: number, name: string): Promise<string> {
    return send(uploadFrames(bytes, name));
  }

  await upload(mib, 'warmup.bin');

  const uploadRuns: {
    seconds: number;
    mibPerSecond: number;
    rssBeforeMiB: number;
    rssPeakMiB: number;
    growthMiB: number;
    samples: number;
    serverCpuSeconds: number;
    rssAfterGcMiB: number;
    retainedHeapPlusExternalMiB: number;
  }[] = [];
  for (let r = 1; r <= runs; r++) {
    const heapBefore = await cloud.collectGarbage();
    const before = await processMemory(cloud.pid);
    let peak = before.rss;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rss } = await processMemory(cloud.pid);
        peak = Math.max(peak, rss);
        samples++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const frames = uploadFrames(totalBytes, `big-${r}.bin`);
    const cpuBefore = await processTreeCpu(cloud.pid);
    const began = performance.now();
    const binaryDataId = await send(frames);
    const seconds = (performance.now() - began) / 1000;
    const serverCpuSeconds = (await processTreeCpu(cloud.pid)).self - cpuBefore.self;
    sampling = false;
    await sampler;
    const stored = await pool.query<{ size_bytes: string }>(
      'SELECT size_bytes FROM binary_data WHERE id = $1',
      [binaryDataId],
    );
    if (Number(stored.rows[0]?.size_bytes) !== totalBytes) {
      throw new Error(`upload ${r}: stored ${stored.rows[0]?.size_bytes} bytes, sent ${totalBytes}`);
    }
    const run = {
      seconds: round(seconds, 3),
      mibPerSecond: round(fileMiB / seconds, 1),
      rssBeforeMiB: round(before.rss / mib, 1),
      rssPeakMiB: round(peak / mib, 1),
      growthMiB: round((peak - before.rss) / mib, 1),
      samples,
      serverCpuSeconds: round(serverCpuSeconds, 2),
    };
    // Garbage or retained? A full GC in the server, then RSS again.
    const heapAfter = await cloud.collectGarbage();
    const afterGc = await processMemory(cloud.pid);
    const retained = (m: NodeJS.MemoryUsage) => m.heapUsed + m.external;
    const runWithGc = {
      ...run,
      rssAfterGcMiB: round(afterGc.rss / mib, 1),
      retainedHeapPlusExternalMiB: round((retained(heapAfter) - retained(heapBefore)) / mib, 1),
    };
    uploadRuns.push(runWithGc);
    console.log(
      `upload ${r}: ${run.mibPerSecond} MiB/s (${run.seconds}s, server CPU ${run.serverCpuSeconds}s); server RSS ${run.rssBeforeMiB} → peak ${run.rssPeakMiB} MiB (growth ${run.growthMiB} MiB, ${samples} samples); after a forced GC ${runWithGc.rssAfterGcMiB} MiB RSS, V8 heap + external ${runWithGc.retainedHeapPlusExternalMiB} MiB more than before`,
    );
  }
  const after = await processMemory(cloud.pid);
  connection.close();

  // Disk baselines: the same bytes written to a file, then copied (stream copy + fsync like the blob store; copyFile).
  const source = path.join(scratch, 'source.bin');
  {
    const handle = await open(source, 'w');
    for (const chunk of fileChunks(totalBytes)) await handle.write(chunk);
    await handle.sync();
    await handle.close();
  }
  const streamCopies: number[] = [];
  const copyFiles: number[] = [];
  for (let r = 1; r <= runs; r++) {
    const target = path.join(scratch, `stream-${r}.bin`);
    let began = performance.now();
    const handle = await open(target, 'w');
    for await (const chunk of createReadStream(source, { highWaterMark: chunkBytes }))
      await handle.write(chunk);
    await handle.sync();
    await handle.close();
    streamCopies.push(fileMiB / ((performance.now() - began) / 1000));
    const copied = path.join(scratch, `copy-${r}.bin`);
    began = performance.now();
    await copyFile(source, copied);
    copyFiles.push(fileMiB / ((performance.now() - began) / 1000));
    if ((await stat(copied)).size !== totalBytes) throw new Error('copyFile size mismatch');
    await rm(target);
    await rm(copied);
    console.log(
      `disk ${r}: stream copy + fsync ${round(streamCopies.at(-1) as number, 1)} MiB/s, fs.copyFile ${round(copyFiles.at(-1) as number, 1)} MiB/s`,
    );
  }

  const uploadMedian = median(uploadRuns.map((r) => r.mibPerSecond));
  const streamMedian = median(streamCopies);
  const copyFileMedian = median(copyFiles);
  const maxGrowth = Math.max(...uploadRuns.map((r) => r.growthMiB));
  const cpuMedian = median(uploadRuns.map((r) => r.serverCpuSeconds));
  const ratio = uploadMedian / streamMedian;
  console.log(`\nFileUpload median ${round(uploadMedian, 1)} MiB/s over ${runs} × ${fileMiB} MiB`);
  console.log(`server CPU per ${fileMiB} MiB upload (Node process, median) ${round(cpuMedian, 2)} s`);
  console.log(
    `disk stream copy + fsync median ${round(streamMedian, 1)} MiB/s; fs.copyFile median ${round(copyFileMedian, 1)} MiB/s`,
  );
  console.log(
    `ratio upload / stream copy ${ratio.toFixed(2)} (target ≥ ${targets.ratioToDisk}); upload / copyFile ${(uploadMedian / copyFileMedian).toFixed(2)}`,
  );
  console.log(
    `server RSS growth during upload: max ${maxGrowth} MiB (target < ${targets.memoryGrowthMiB}); RSS after all uploads ${round(after.rss / mib, 1)} MiB, VmHWM ${round(after.hwm / mib, 1)} MiB`,
  );
  writeResult({
    name: `streaming-upload${experimentSuffix}${args.profile ? '-profiled' : ''}`,
    machine: machineInfo(),
    parameters: { fileMiB, chunkKiB: chunkBytes / 1024, runs, serverExperiments: experiments },
    figures: [
      {
        metric: `FileUpload ${fileMiB} MiB in 64 KiB chunks (median of ${runs})`,
        value: `${round(uploadMedian, 1)} MiB/s`,
      },
      {
        metric: `server CPU seconds per ${fileMiB} MiB upload (Node process, median)`,
        value: `${round(cpuMedian, 2)} s`,
      },
      {
        metric: 'disk copy of the same bytes: stream + fsync / fs.copyFile (median)',
        value: `${round(streamMedian, 1)} / ${round(copyFileMedian, 1)} MiB/s`,
      },
      {
        metric: 'upload / disk stream copy (upload / copyFile)',
        value: `${ratio.toFixed(2)} (${(uploadMedian / copyFileMedian).toFixed(2)})`,
        target: `≥ ${targets.ratioToDisk}`,
        met: ratio >= targets.ratioToDisk,
      },
      {
        metric: 'server process RSS growth during an upload (max over runs)',
        value: `${maxGrowth} MiB`,
        target: `< ${targets.memoryGrowthMiB} MiB`,
        met: maxGrowth < targets.memoryGrowthMiB,
      },
    ],
    medians: {
      uploadMiBPerSecond: round(uploadMedian, 1),
      streamCopyMiBPerSecond: round(streamMedian, 1),
      copyFileMiBPerSecond: round(copyFileMedian, 1),
      ratioToStreamCopy: round(ratio, 3),
      ratioToCopyFile: round(uploadMedian / copyFileMedian, 3),
      maxRssGrowthMiB: maxGrowth,
      serverCpuSeconds: round(cpuMedian, 2),
    },
    uploads: uploadRuns,
    disk: {
      streamCopyMiBPerSecond: streamCopies.map((v) => round(v, 1)),
      copyFileMiBPerSecond: copyFiles.map((v) => round(v, 1)),
    },
    serverAfter: { rssMiB: round(after.rss / mib, 1), hwmMiB: round(after.hwm / mib, 1) },
  });
} finally {
  await pool.end();
  await cloud.stop();
  await rm(scratch, { recursive: true, force: true });
}
if (cloud.profileDir) {
  const file = await findProfile(cloud.profileDir);
  if (file) printProfile(await summarizeProfile(file));
  await removeDataDir(cloud.dataDir);
}
