import assert from 'node:assert/strict';
import { appendFile, mkdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sizeDelimitedDecodeStream, sizeDelimitedEncode } from '@bufbuild/protobuf/wire';
import { dataSyncPb } from '@mcloud/protocol';
import {
  type CaptureFileMetadata,
  decodeCaptureFile,
  encodeCapturedReading,
  encodeCaptureHeader,
  isCaptureFileFormatError,
  sensorDataToProto,
} from '../../src/data/capture-file-format.ts';
import { payloadChunks, readCaptureFile } from '../../src/data/capture-file-reader.ts';
import { recoverInterruptedCaptureFiles } from '../../src/data/capture-file-recovery.ts';
import { createTabularCaptureWriter, writeBinaryCaptureFile } from '../../src/data/capture-file-writer.ts';
import { captureFileStem, methodCaptureDir } from '../../src/data/capture-paths.ts';
import type { JsonObject } from '../../src/json.ts';
import { createSilentLogger } from '../../src/logging/logger.ts';
import { listFiles, makeTempDir } from './data-fixtures.ts';

let temp: { dir: string; remove(): Promise<void> };
before(async () => {
  temp = await makeTempDir();
});
after(async () => {
  await temp.remove();
});

const tabularMetadata: CaptureFileMetadata = {
  componentType: 'rdk:component:sensor',
  componentName: 's1',
  methodName: 'Readings',
  dataType: 'tabular',
  methodParameters: { pin_name: 'gpio7', rate: 2, nested: { on: true, list: [1, 'a', null] } },
  fileExtension: '.dat',
  tags: ['a', 'b'],
};

const reading = (ms: number, value: number) => ({
  timeRequestedMs: ms,
  timeReceivedMs: ms + 1.5,
  data: { kind: 'struct' as const, value: { readings: { value, label: `r${value}` } } },
});

test('capture directory and file names follow the reference layout', () => {
  assert.equal(
    methodCaptureDir('/cap', 'rdk:component:sensor', 'remote:s1', 'Readings'),
    '/cap/rdk_component_sensor/remote_s1/Readings',
  );
  const stem = captureFileStem(Date.UTC(2026, 0, 2, 3, 4, 5, 678), 9);
  assert.match(stem, /^\d{4}-\d{2}-\d{2}T\d{2}_\d{2}_\d{2}\.678009(Z|[+-]\d{2}_\d{2})$/);
  assert.ok(!stem.includes(':'));
});

test('the on-disk bytes are size-delimited DataCaptureMetadata then SensorData (readable by any protobuf tool)', async () => {
  const dir = path.join(temp.dir, 'format');
  const writer = createTabularCaptureWriter({
    dir,
    metadata: tabularMetadata,
    maxFileSizeBytes: 1 << 20,
    bufferSizeBytes: 4096,
    nowMs: () => Date.now(),
  });
  await writer.write(reading(1_700_000_000_000.25, 1));
  await writer.write(reading(1_700_000_000_100, 2));
  await writer.flush();
  const file = (await listFiles(dir))[0] ?? '';
  assert.ok(file.endsWith('.capture'), `completed file, got ${file}`);
  const bytes = await readFile(path.join(dir, file));
  assert.equal((await stat(path.join(dir, file))).mode & 0o777, 0o600);

  // Decode with protobuf-es' own size-delimited reader, independent of our decoder.
  const header = sizeDelimitedDecodeStream(
    dataSyncPb.DataCaptureMetadataSchema,
    (async function* () {
      yield bytes;
    })(),
  );
  const first = await header.next();
  assert.equal(first.value?.componentName, 's1');
  assert.equal(first.value?.type, dataSyncPb.DataType.TABULAR_SENSOR);
  assert.deepEqual(first.value?.tags, ['a', 'b']);

  const decoded = decodeCaptureFile(bytes, file);
  assert.deepEqual(decoded.metadata, tabularMetadata);
  assert.equal(decoded.readings.length, 2);
  assert.deepEqual(decoded.readings[0], reading(1_700_000_000_000.25, 1));
  assert.deepEqual(decoded.readings[1]?.data, {
    kind: 'struct',
    value: { readings: { value: 2, label: 'r2' } },
  });
});

test('the direct tabular encoder writes exactly the bytes protobuf-es writes', () => {
  const values: JsonObject[] = [
    { readings: { a: 1.5, b: -0, c: 'x', d: true, e: false, f: null, g: '', h: 0 } },
    { readings: { nested: { deep: { list: [1, 'two', null, [3, { four: 4 }], {}], empty: {} } } } },
    { readings: { big: 1e300, small: -1e-300, nan: Number.NaN, unicode: 'héllo ✓ 😀' } },
    {},
  ];
  for (const [index, value] of values.entries()) {
    for (const ms of [0, 1, 1_700_000_000_123.456, Date.now()]) {
      const reading = {
        timeRequestedMs: ms,
        timeReceivedMs: ms + 0.001 * index,
        data: { kind: 'struct' as const, value },
      };
      const expected = sizeDelimitedEncode(dataSyncPb.SensorDataSchema, sensorDataToProto(reading));
      assert.deepEqual(
        Buffer.from(encodeCapturedReading(reading)),
        Buffer.from(expected),
        JSON.stringify({ value, ms }),
      );
    }
  }
});

test('a tabular file is completed once it exceeds the size limit; flush completes a partial one', async () => {
  const dir = path.join(temp.dir, 'rollover');
  const writer = createTabularCaptureWriter({
    dir,
    metadata: tabularMetadata,
    maxFileSizeBytes: 1000,
    bufferSizeBytes: 100,
    nowMs: () => Date.now(),
  });
  for (let index = 0; index < 100; index++) await writer.write(reading(1_700_000_000_000 + index, index));
  const before = await listFiles(dir);
  assert.ok(before.filter((name) => name.endsWith('.capture')).length >= 2, 'several completed files');
  assert.ok(before.filter((name) => name.endsWith('.prog')).length <= 1, 'at most one open file');
  await writer.flush();
  const files = await listFiles(dir);
  assert.ok(files.every((name) => name.endsWith('.capture')));
  assert.deepEqual([...files].sort(), files, 'lexical order');
  let total = 0;
  const values: number[] = [];
  for (const name of files) {
    const bytes = await readFile(path.join(dir, name));
    assert.ok(bytes.length <= 1000 + 200, `file ${name} is ${bytes.length} bytes`);
    const decoded = decodeCaptureFile(bytes, name);
    total += decoded.readings.length;
    for (const entry of decoded.readings)
      values.push((entry.data.value as { readings: { value: number } }).readings.value);
  }
  assert.equal(total, 100);
  assert.deepEqual(
    values,
    Array.from({ length: 100 }, (_, index) => index),
    'order kept across files',
  );
});

test('a binary capture is one completed file; large payloads are located and streamed from disk', async () => {
  const dir = path.join(temp.dir, 'binary');
  const metadata: CaptureFileMetadata = { ...tabularMetadata, dataType: 'binary', fileExtension: '.jpeg' };
  const small = new Uint8Array(1000).map((_, index) => index % 251);
  const large = new Uint8Array(5 * 1024 * 1024 + 17).map((_, index) => (index * 7) % 253);
  const smallPath = await writeBinaryCaptureFile(
    dir,
    metadata,
    { timeRequestedMs: 1, timeReceivedMs: 2, data: { kind: 'binary', value: small } },
    1000,
  );
  const largePath = await writeBinaryCaptureFile(
    dir,
    metadata,
    { timeRequestedMs: 3, timeReceivedMs: 4, data: { kind: 'binary', value: large } },
    1000,
  );
  assert.notEqual(smallPath, largePath, 'same millisecond, distinct names');

  const smallFile = await readCaptureFile(smallPath);
  assert.equal(smallFile.kind, 'binary');
  assert.equal(smallFile.readings.length, 1);
  const largeFile = await readCaptureFile(largePath);
  assert.equal(largeFile.kind, 'binary');
  const located = largeFile.readings[0];
  assert.ok(located && located.bytes === undefined, 'the large payload is not loaded');
  assert.equal(located?.length, large.length);
  assert.equal(located?.timeReceivedMs, 4);
  const chunks: Buffer[] = [];
  for await (const chunk of payloadChunks(largePath, located, 64 * 1024)) {
    assert.ok(chunk.length <= 64 * 1024);
    chunks.push(Buffer.from(chunk));
  }
  assert.ok(Buffer.concat(chunks).equals(Buffer.from(large)));
});

test('reading a damaged capture file is a format error (terminal), never a partial upload', async () => {
  const dir = path.join(temp.dir, 'damaged');
  const writer = createTabularCaptureWriter({
    dir,
    metadata: tabularMetadata,
    maxFileSizeBytes: 1 << 20,
    bufferSizeBytes: 1,
    nowMs: () => Date.now(),
  });
  await writer.write(reading(1, 1));
  await writer.write(reading(2, 2));
  await writer.flush();
  const [name] = await listFiles(dir);
  const filePath = path.join(dir, name as string);
  await truncate(filePath, (await stat(filePath)).size - 3);
  await assert.rejects(
    readCaptureFile(filePath),
    (error) => isCaptureFileFormatError(error) && /truncated/.test(String(error)),
  );

  const garbage = path.join(dir, 'garbage.capture');
  await writeFile(garbage, Buffer.from([5, 1, 2, 3, 4, 5]));
  await assert.rejects(readCaptureFile(garbage), isCaptureFileFormatError);

  const mixed = path.join(dir, 'mixed.capture');
  await writeFile(
    mixed,
    Buffer.concat([
      encodeCaptureHeader(tabularMetadata),
      encodeCapturedReading({
        timeRequestedMs: 1,
        timeReceivedMs: 1,
        data: { kind: 'binary', value: new Uint8Array(3) },
      }),
    ]),
  );
  await assert.rejects(
    readCaptureFile(mixed),
    (error) => isCaptureFileFormatError(error) && /binary/.test(String(error)),
  );
});

test('start-up recovery keeps the whole readings of a crash-interrupted .prog file', async () => {
  const dir = path.join(temp.dir, 'recovery', 'rdk_component_sensor', 's1', 'Readings');
  const captureRoot = path.join(temp.dir, 'recovery');
  await mkdir(dir, { recursive: true });
  const interrupted = path.join(dir, 'x.prog');
  const whole = Buffer.concat([
    encodeCaptureHeader(tabularMetadata),
    encodeCapturedReading(reading(1, 1)),
    encodeCapturedReading(reading(2, 2)),
  ]);
  const partial = encodeCapturedReading(reading(3, 3)).subarray(0, 7);
  await writeFile(interrupted, whole);
  await appendFile(interrupted, partial);
  await writeFile(path.join(dir, 'headerless.prog'), encodeCaptureHeader(tabularMetadata).subarray(0, 4));

  const result = await recoverInterruptedCaptureFiles(captureRoot, createSilentLogger());
  assert.deepEqual(result, { recovered: 1, readings: 2, removed: 1 });
  const files = await listFiles(dir);
  assert.deepEqual(files, ['x.capture']);
  const decoded = decodeCaptureFile(await readFile(path.join(dir, 'x.capture')), 'x');
  assert.equal(decoded.readings.length, 2);
});
