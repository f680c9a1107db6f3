import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { createGrpcTransport } from '@connectrpc/connect-node';
import {
  cloudLogEntryLimits,
  createCloudLogSender,
  logEntryFromProto,
  logEntryToProto,
  truncateUtf8,
} from '../../src/logging/cloud-log-sender.ts';
import { createLogging } from '../../src/logging/logging-system.ts';
import { type FakeLogCloud, startFakeLogCloud } from './fake-log-cloud.ts';

let dir: string;
let cloud: FakeLogCloud;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ms-log-upload-'));
  cloud = await startFakeLogCloud();
});
after(async () => {
  await cloud.stop();
  await rm(dir, { recursive: true, force: true });
});

async function waitFor(what: string, condition: () => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('logs reach the cloud through RobotService.Log (local Connect server)', () => {
  it('uploads in batches with host, level, time, caller and zap-shaped fields; survives the cloud stopping', async () => {
    const lines: string[] = [];
    const logging = createLogging({ writeStdout: (line) => lines.push(line) });
    const logger = logging.loggerFor('rdk.resource_manager.rdk:component:sensor/s1');
    logger.info('before the cloud connection', { attempt: 1, ratio: 0.5, ok: true, detail: { a: [1] } });
    const transport = createGrpcTransport({ baseUrl: cloud.url });
    logging.uploadToCloud({
      send: createCloudLogSender({ transport, partId: 'part-1' }),
      spoolDirectory: path.join(dir, 'spool'),
      flushIntervalMs: 20,
      retryIntervalMs: 200,
      sendTimeoutMs: 2000,
    });
    for (let i = 0; i < 2500; i++) logger.info(`online ${i}`);
    await waitFor('the online entries', () => cloud.entries().length >= 2501);
    assert.ok(cloud.received.every((request) => request.partId === 'part-1' && request.logs.length <= 1000));

    const first = cloud.entries()[0];
    assert.ok(first);
    assert.equal(first.host, hostname());
    assert.equal(first.level, 'info');
    assert.equal(first.loggerName, 'rdk.resource_manager.rdk:component:sensor/s1');
    assert.equal(first.message, 'before the cloud connection');
    assert.ok(first.time && Math.abs(timestampMs(first.time) - Date.now()) < 60_000);
    assert.equal(first.caller?.Defined, true);
    assert.match(String(first.caller?.File), /cloud-log-upload\.test\.ts$/);
    assert.deepEqual(first.fields, [
      { Key: 'attempt', Type: 11, Integer: 1, String: '', Interface: null },
      { Key: 'ratio', Type: 9, Integer: 0, String: '0.5', Interface: null },
      { Key: 'ok', Type: 4, Integer: 1, String: '', Interface: null },
      { Key: 'detail', Type: 23, Integer: 0, String: '', Interface: { a: [1] } },
    ]);
    assert.deepEqual(logEntryFromProto(first, 0).fields, {
      attempt: 1,
      ratio: 0.5,
      ok: true,
      detail: { a: [1] },
    });

    await cloud.stop();
    for (let i = 0; i < 1500; i++) logger.info(`offline ${i}`);
    await waitFor('the upload to notice the outage', () => logging.uploadStats()?.online === false);
    await waitFor('the offline entries on disk', () => (logging.uploadStats()?.spooled ?? 0) >= 1500);
    assert.ok((await readdir(path.join(dir, 'spool'))).length >= 2, 'spool segments on disk');
    await cloud.restart();
    await waitFor('the spool to drain', () =>
      cloud.entries().some((entry) => entry.message === 'offline 1499'),
    );
    await logging.close();

    const messages = cloud.entries().map((entry) => entry.message);
    const expected = [
      'before the cloud connection',
      ...Array.from({ length: 2500 }, (_, i) => `online ${i}`),
      ...Array.from({ length: 1500 }, (_, i) => `offline ${i}`),
    ];
    assert.deepEqual(
      messages.filter((message) => !message.startsWith('error logging to network')),
      expected,
      'every entry exactly once, in order',
    );
    assert.equal(messages.filter((message) => message.startsWith('error logging to network')).length, 1);
    assert.equal(logging.uploadStats()?.dropped, 0);
    assert.deepEqual(await readdir(path.join(dir, 'spool')), []);
    assert.ok(lines.some((line) => line.includes('\tERROR\trdk.networking.netappender\t')));
  });
});

describe('entries as the cloud accepts them', () => {
  it('cuts oversized messages, stacks and fields so one entry cannot get a whole batch rejected', () => {
    const proto = logEntryToProto(
      {
        timeMs: 0,
        level: 'error',
        loggerName: 'rdk.x',
        message: 'é'.repeat(40_000),
        stack: 's'.repeat(70_000),
        fields: { blob: 'x'.repeat(70_000) },
      },
      'host',
    );
    assert.ok(Buffer.byteLength(proto.message) <= cloudLogEntryLimits.messageMaxBytes);
    assert.ok(proto.message.endsWith('é …(truncated)'), 'cut on a character boundary');
    assert.ok(Buffer.byteLength(proto.stack) <= cloudLogEntryLimits.stackMaxBytes);
    assert.equal(proto.fields.length, 1);
    assert.equal(proto.fields[0]?.Key, 'fields_truncated');
    assert.equal(truncateUtf8('short', 10), 'short');
  });
});
