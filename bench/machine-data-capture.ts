/**
 * The machine-server's data manager: how fast readings are captured to disk, and how fast capture files
 * are synced to the cloud.
 *
 *   node bench/machine-data-capture.ts [--rounds 3] [--sensors 8] [--seconds 5] [--sync-readings 200000]
 *
 * Capture: `--sensors` fake sensors (a 6-field Readings map each, like the ingest benchmark) captured
 * by the real collectors at 5 kHz each (sub-millisecond schedule) for `--seconds`, written to capture
 * files (256 KiB roll-over, fsync before each file is completed); readings written per second, and the
 * bare capture-file writer (no resource call, no schedule) on the same readings as the ceiling.
 * Sync: `--sync-readings` readings pre-written to capture files, then one data manager Sync pass uploads
 * them (DataCaptureUpload per file, files deleted after the acknowledgement) to a cloud in a child
 * process with its own embedded PostgreSQL; readings per second until the directory is empty, with the
 * default worker count on this machine (NumCPU/2) and with 4 workers.
 */

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createClient } from '@connectrpc/connect';
import { dataSyncPb } from '@mcloud/protocol';
import { systemClock } from '../apps/machine-server/src/clock.ts';
import { createCloudConnection } from '../apps/machine-server/src/cloud/cloud-connection.ts';
import type { CapturedReading } from '../apps/machine-server/src/data/capture-file-format.ts';
import { createTabularCaptureWriter } from '../apps/machine-server/src/data/capture-file-writer.ts';
import { parseCaptureMethods } from '../apps/machine-server/src/data/capture-method-config.ts';
import { startDataManager } from '../apps/machine-server/src/data/data-manager.ts';
import { parseDataManagerConfig } from '../apps/machine-server/src/data/data-manager-config.ts';
import type { JsonObject } from '../apps/machine-server/src/json.ts';
import { createSilentLogger } from '../apps/machine-server/src/logging/logger.ts';
import { type Sensor, sensorApi } from '../apps/machine-server/src/resources/apis/sensor.ts';
import { createResourceName } from '../apps/machine-server/src/resources/resource-name.ts';
import { createMachine, openPool } from './lib/clients.ts';
import { startCloudProcess } from './lib/cloud-process.ts';
import { fmtInt, machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    sensors: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '5' },
    'sync-readings': { type: 'string', default: '200000' },
  },
});
const rounds = Number(args.rounds);
const sensorCount = Number(args.sensors);
const captureSeconds = Number(args.seconds);
const syncReadings = Number(args['sync-readings']);
const captureHz = 5000;
const dataManagerName = createResourceName(
  { namespace: 'rdk', type: 'service', subtype: 'data_manager' },
  'dm',
);
const logger = createSilentLogger();

function readingOf(seq: number): JsonObject {
  return {
    seq,
    temperature: 20 + (seq % 100) / 10,
    humidity: 40 + (seq % 37),
    pressure: 1013.25 - (seq % 11) / 4,
    co2_ppm: 400 + (seq % 250),
    battery_v: 3.7 - (seq % 9) / 100,
    status: seq % 97 === 0 ? 'warn' : 'ok',
  };
}

function benchSensor(name: string): Sensor {
  let calls = 0;
  return {
    name: createResourceName(sensorApi, name),
    async getReadings() {
      calls++;
      return readingOf(calls);
    },
    async doCommand() {
      return {};
    },
    async close() {},
  };
}

async function countFiles(dir: string): Promise<number> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile())
      .length;
  } catch {
    return 0;
  }
}

/** Readings per second the collectors write to disk. */
async function captureRound(dir: string): Promise<{ readingsPerSecond: number; files: number }> {
  const sensors = Array.from({ length: sensorCount }, (_, index) => benchSensor(`bench-${index}`));
  const methods = parseCaptureMethods(
    [
      {
        type: 'data_manager',
        attributes: { capture_methods: [{ method: 'Readings', capture_frequency_hz: captureHz }] },
      },
    ],
    'bench',
  );
  const manager = await startDataManager({
    name: dataManagerName,
    config: parseDataManagerConfig({ capture_dir: dir, sync_disabled: true }, 'bench', { viamHome: dir }),
    targets: sensors.map((resource) => ({ resource, methods })),
    resources: sensors,
    cloud: () => undefined,
    logger,
    clock: systemClock,
  });
  const began = performance.now();
  await new Promise((resolve) => setTimeout(resolve, captureSeconds * 1000));
  const captured = manager.status().capturedReadings;
  const seconds = (performance.now() - began) / 1000;
  await manager.close(AbortSignal.timeout(60_000));
  return { readingsPerSecond: captured / seconds, files: await countFiles(dir) };
}

/** The capture-file writer alone: the disk-side ceiling of capture. */
async function writerRound(dir: string, count: number): Promise<number> {
  const writer = createTabularCaptureWriter({
    dir,
    metadata: {
      componentType: 'rdk:component:sensor',
      componentName: 'bench',
      methodName: 'Readings',
      dataType: 'tabular',
      methodParameters: {},
      fileExtension: '.dat',
      tags: [],
    },
    maxFileSizeBytes: 256 * 1024,
    bufferSizeBytes: 4096,
    nowMs: () => Date.now(),
  });
  const began = performance.now();
  for (let seq = 1; seq <= count; seq++) {
    const now = Date.now();
    const reading: CapturedReading = {
      timeRequestedMs: now,
      timeReceivedMs: now,
      data: { kind: 'struct', value: { readings: readingOf(seq) } },
    };
    await writer.write(reading);
  }
  await writer.flush();
  return count / ((performance.now() - began) / 1000);
}

/** Capture files holding `count` readings, written like the collectors write them. */
async function prepareCaptureFiles(dir: string, count: number): Promise<void> {
  const perSensor = Math.ceil(count / sensorCount);
  for (let sensor = 0; sensor < sensorCount; sensor++) {
    const writer = createTabularCaptureWriter({
      dir: path.join(dir, 'rdk_component_sensor', `bench-${sensor}`, 'Readings'),
      metadata: {
        componentType: 'rdk:component:sensor',
        componentName: `bench-${sensor}`,
        methodName: 'Readings',
        dataType: 'tabular',
        methodParameters: {},
        fileExtension: '.dat',
        tags: [],
      },
      maxFileSizeBytes: 256 * 1024,
      bufferSizeBytes: 64 * 1024,
      nowMs: () => Date.now(),
    });
    const base = Date.now() + sensor * 1_000_000;
    for (let seq = 1; seq <= perSensor && sensor * perSensor + seq <= count; seq++) {
      await writer.write({
        timeRequestedMs: base + seq,
        timeReceivedMs: base + seq,
        data: { kind: 'struct', value: { readings: readingOf(seq) } },
      });
    }
    await writer.flush();
  }
}

const info = machineInfo();
const scratch = await mkdtemp(path.join(tmpdir(), 'ms-data-bench-'));
try {
  console.log(`capture: ${sensorCount} sensors × ${captureHz} Hz for ${captureSeconds}s, ${rounds} rounds`);
  const captureRates: number[] = [];
  const writerRates: number[] = [];
  let filesPerRound = 0;
  for (let index = 0; index < rounds; index++) {
    const dir = path.join(scratch, `capture-${index}`);
    const { readingsPerSecond, files } = await captureRound(dir);
    captureRates.push(readingsPerSecond);
    filesPerRound = files;
    await rm(dir, { recursive: true, force: true });
    const writerDir = path.join(scratch, `writer-${index}`);
    writerRates.push(await writerRound(writerDir, 100_000));
    await rm(writerDir, { recursive: true, force: true });
    console.log(
      `  round ${index + 1}: collectors ${fmtInt(readingsPerSecond)} readings/s (${files} files), writer ${fmtInt(writerRates.at(-1) ?? 0)} readings/s`,
    );
  }

  console.log(`sync: ${fmtInt(syncReadings)} readings in capture files → cloud (child process)`);
  const cloud = await startCloudProcess();
  const pool = openPool(cloud.databaseUrl, 2);
  const machine = await createMachine(pool, cloud.bootstrap, 'bench-machine');
  await pool.end();
  const connection = createCloudConnection({
    appAddress: cloud.url,
    credentials: {
      partId: machine.partId,
      apiKey: { id: cloud.bootstrap.api_key_id, key: cloud.bootstrap.api_key },
    },
  });
  const target = {
    client: createClient(dataSyncPb.DataSyncService, connection.transport),
    partId: machine.partId,
  };
  const defaultWorkers = Math.max(1, Math.floor(availableParallelism() / 2));
  const syncRates: Record<string, number[]> = { [String(defaultWorkers)]: [], '4': [] };
  try {
    for (let index = 0; index < rounds; index++) {
      for (const workers of Object.keys(syncRates)) {
        const dir = path.join(scratch, `sync-${index}-${workers}`);
        await prepareCaptureFiles(dir, syncReadings);
        const files = await countFiles(dir);
        const manager = await startDataManager({
          name: dataManagerName,
          config: parseDataManagerConfig(
            {
              capture_dir: dir,
              capture_disabled: true,
              sync_disabled: true,
              maximum_num_sync_threads: Number(workers),
            },
            'bench',
            { viamHome: dir },
          ),
          targets: [],
          resources: [],
          cloud: () => target,
          logger,
          clock: systemClock,
        });
        const began = performance.now();
        await manager.sync({ signal: AbortSignal.timeout(600_000) });
        const seconds = (performance.now() - began) / 1000;
        const left = await countFiles(dir);
        await manager.close(AbortSignal.timeout(60_000));
        if (left !== 0) throw new Error(`${left} files were not synced`);
        const status = manager.status();
        if (status.uploadedReadings !== syncReadings) {
          throw new Error(`uploaded ${status.uploadedReadings} readings, expected ${syncReadings}`);
        }
        syncRates[workers]?.push(syncReadings / seconds);
        console.log(
          `  round ${index + 1}, ${workers} workers: ${files} files, ${fmtInt(syncReadings / seconds)} readings/s`,
        );
        await rm(dir, { recursive: true, force: true });
      }
    }
  } finally {
    connection.close();
    await cloud.stop();
  }

  const captureMedian = median(captureRates);
  const writerMedian = median(writerRates);
  const syncDefault = median(syncRates[String(defaultWorkers)] ?? []);
  const syncFour = median(syncRates['4'] ?? []);
  writeResult({
    name: 'machine-data-capture',
    machine: info,
    parameters: { rounds, sensorCount, captureHz, captureSeconds, syncReadings, defaultWorkers },
    captureRates: captureRates.map((value) => round(value)),
    writerRates: writerRates.map((value) => round(value)),
    syncRates,
    filesPerCaptureRound: filesPerRound,
    figures: [
      {
        metric: `capture to disk: ${sensorCount} sensors × ${captureHz} Hz through the collectors (median of ${rounds})`,
        value: `${fmtInt(captureMedian)} readings/s`,
      },
      {
        metric: 'capture-file writer alone, same readings (median)',
        value: `${fmtInt(writerMedian)} readings/s`,
      },
      {
        metric: `sync to the cloud, ${fmtInt(syncReadings)} readings in 256 KiB files, ${defaultWorkers} / 4 upload workers (median)`,
        value: `${fmtInt(syncDefault)} / ${fmtInt(syncFour)} readings/s`,
      },
    ],
  });
} finally {
  await rm(scratch, { recursive: true, force: true });
}
