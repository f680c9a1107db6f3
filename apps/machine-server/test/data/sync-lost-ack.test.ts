/**
 * A lost acknowledgement: the cloud stores an upload, the connection drops right after the response
 * headers, the machine keeps the file and uploads it again — the cloud's idempotent ingest stores nothing
 * twice and the retried upload deletes the file. For every upload RPC the syncer uses.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startTestCloud, type TestCloud } from '@mcloud/cloud/testing';
import { systemClock } from '../../src/clock.ts';
import type { CloudConnection } from '../../src/cloud/cloud-connection.ts';
import type { CaptureFileMetadata } from '../../src/data/capture-file-format.ts';
import { createTabularCaptureWriter, writeBinaryCaptureFile } from '../../src/data/capture-file-writer.ts';
import { createDataSyncer, type DataSyncer } from '../../src/data/data-syncer.ts';
import { createSilentLogger } from '../../src/logging/logger.ts';
import {
  binaryItems,
  createMachinePart,
  type MachinePart,
  machineUploadTarget,
  tabularReadings,
} from './cloud-fixtures.ts';
import { listFiles, makeTempDir } from './data-fixtures.ts';
import { type CutProxy, startCutProxy } from './tcp-cut-proxy.ts';

let t: TestCloud;
let part: MachinePart;
let proxy: CutProxy;
let connection: CloudConnection;
let temp: { dir: string; remove(): Promise<void> };
let syncer: DataSyncer;
let captureDir: string;
let extraDir: string;

before(async () => {
  t = await startTestCloud();
  part = await createMachinePart(t);
  proxy = await startCutProxy(t.url);
  temp = await makeTempDir();
  captureDir = path.join(temp.dir, 'capture');
  extraDir = path.join(temp.dir, 'extra');
  await mkdir(extraDir, { recursive: true });
  const machine = machineUploadTarget(proxy.url, part);
  connection = machine.connection;
  // Authenticate first, so the armed cut hits an upload, not the token request.
  await connection.accessToken();
  syncer = createDataSyncer({
    captureDir,
    additionalSyncPaths: [extraDir],
    fileLastModifiedMs: 0,
    maxConcurrentUploads: 1,
    tags: ['svc'],
    target: () => machine.target,
    beforeWalk: async () => {},
    clock: systemClock,
    logger: createSilentLogger(),
  });
});
after(async () => {
  await syncer?.close();
  connection?.close();
  await proxy?.close();
  await t?.stop();
  await temp?.remove();
});

const metadata = (componentName: string, dataType: 'tabular' | 'binary'): CaptureFileMetadata => ({
  componentType: dataType === 'tabular' ? 'rdk:component:sensor' : 'rdk:component:camera',
  componentName,
  methodName: dataType === 'tabular' ? 'Readings' : 'ReadImage',
  dataType,
  methodParameters: {},
  fileExtension: dataType === 'tabular' ? '.dat' : '.jpeg',
  tags: ['t1'],
});

async function syncWithLostAck(): Promise<void> {
  proxy.armCuts(1);
  const cutsBefore = proxy.cuts();
  const first = await syncer.syncNow();
  assert.equal(proxy.cuts(), cutsBefore + 1, 'the proxy cut the connection after the response headers');
  assert.equal(first.uploaded, 0, 'the acknowledgement was lost');
  assert.equal(first.retryLater, 1);
}

async function syncAgain(): Promise<void> {
  const second = await syncer.syncNow();
  assert.deepEqual(second, { uploaded: 1, failedTerminally: 0, retryLater: 0 });
  assert.deepEqual(await listFiles(captureDir), []);
}

test('tabular DataCaptureUpload: stored once although the acknowledgement was lost', async () => {
  const writer = createTabularCaptureWriter({
    dir: path.join(captureDir, 'rdk_component_sensor', 'lost-ack-sensor', 'Readings'),
    metadata: metadata('lost-ack-sensor', 'tabular'),
    maxFileSizeBytes: 1 << 20,
    bufferSizeBytes: 4096,
    nowMs: () => Date.now(),
  });
  const base = Date.now();
  for (let seq = 1; seq <= 25; seq++) {
    await writer.write({
      timeRequestedMs: base + seq,
      timeReceivedMs: base + seq,
      data: { kind: 'struct', value: { readings: { seq } } },
    });
  }
  await writer.flush();

  await syncWithLostAck();
  assert.equal((await listFiles(captureDir)).length, 1, 'the file is kept until acknowledged');
  const stored = await tabularReadings(part.owner, part.partId, 'lost-ack-sensor');
  assert.equal(stored.length, 25, 'the cloud had committed the upload before the cut');

  await syncAgain();
  const after = await tabularReadings(part.owner, part.partId, 'lost-ack-sensor');
  assert.deepEqual(
    after.map((entry) => (entry.data as { readings: { seq: number } }).readings.seq).sort((a, b) => a - b),
    Array.from({ length: 25 }, (_, index) => index + 1),
  );
  assert.deepEqual(after[0]?.tags, ['t1']);
});

test('binary DataCaptureUpload (small) and StreamingDataCaptureUpload (large): stored once', async () => {
  const dir = path.join(captureDir, 'rdk_component_camera', 'lost-ack-cam', 'ReadImage');
  const small = new Uint8Array(20_000).map((_, index) => index % 256);
  await writeBinaryCaptureFile(
    dir,
    metadata('lost-ack-cam', 'binary'),
    { timeRequestedMs: Date.now(), timeReceivedMs: Date.now(), data: { kind: 'binary', value: small } },
    Date.now(),
  );
  await syncWithLostAck();
  assert.equal((await binaryItems(part.owner, part.partId, 'lost-ack-cam')).length, 1);
  await syncAgain();

  const large = new Uint8Array(3 * 1024 * 1024).map((_, index) => (index * 13) % 256);
  await writeBinaryCaptureFile(
    dir,
    metadata('lost-ack-cam', 'binary'),
    { timeRequestedMs: Date.now(), timeReceivedMs: Date.now(), data: { kind: 'binary', value: large } },
    Date.now(),
  );
  await syncWithLostAck();
  await syncAgain();

  const items = await binaryItems(part.owner, part.partId, 'lost-ack-cam');
  assert.equal(items.length, 2, 'one item per capture, no duplicates');
  const sizes = items.map((item) => item.binary.length).sort((a, b) => a - b);
  assert.deepEqual(sizes, [small.length, large.length]);
  const stored = items.find((item) => item.binary.length === large.length);
  assert.ok(stored && Buffer.from(stored.binary).equals(Buffer.from(large)), 'the streamed bytes are intact');
  assert.equal(stored?.fileExt, '.jpeg');
});

test('FileUpload of an additional sync path: stored once, with tag= and service tags', async () => {
  const dir = path.join(extraDir, 'tag=field');
  await mkdir(dir, { recursive: true });
  const content = Buffer.alloc(200_000, 7);
  await writeFile(path.join(dir, 'notes.txt'), content);
  proxy.armCuts(1);
  const first = await syncer.syncNow();
  assert.equal(first.retryLater, 1);
  assert.deepEqual(await listFiles(extraDir), ['tag=field/notes.txt']);
  const second = await syncer.syncNow();
  assert.equal(second.uploaded, 1);
  assert.deepEqual(await listFiles(extraDir), []);
  const files = (await binaryItems(part.owner, part.partId, '')).filter((item) =>
    item.fileName.endsWith('notes.txt'),
  );
  assert.equal(files.length, 1);
  assert.ok(Buffer.from(files[0]?.binary ?? []).equals(content));
  assert.deepEqual([...(files[0]?.tags ?? [])].sort(), ['field', 'svc']);
});
