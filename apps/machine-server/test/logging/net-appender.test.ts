import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LogEntry } from '../../src/logging/log-entry.ts';
import { openLogSpool } from '../../src/logging/log-spool.ts';
import type { LogFields, LogLevel } from '../../src/logging/logger.ts';
import {
  createNetAppender,
  LogBatchRejectedError,
  type SendLogBatch,
} from '../../src/logging/net-appender.ts';
import { manualClock } from './manual-clock.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ms-net-appender-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function entry(n: number): LogEntry {
  return { timeMs: 1_000 + n, level: 'info', loggerName: 'rdk.test', message: `m${n}`, fields: { n } };
}

/** A cloud that can be switched off; records every acknowledged batch. */
function fakeCloud() {
  const batches: LogEntry[][] = [];
  let up = true;
  let rejectNext = false;
  const send: SendLogBatch = async (entries) => {
    if (rejectNext) {
      rejectNext = false;
      throw new LogBatchRejectedError('bad entry');
    }
    if (!up) throw new Error('connect ECONNREFUSED 127.0.0.1:1');
    batches.push([...entries]);
  };
  return {
    send,
    batches,
    received: () => batches.flat().map((e) => e.message),
    setUp(value: boolean) {
      up = value;
    },
    rejectNext() {
      rejectNext = true;
    },
  };
}

function reports() {
  const list: { level: LogLevel; message: string; fields?: LogFields }[] = [];
  const report = (level: LogLevel, message: string, fields?: LogFields) =>
    list.push({ level, message, ...(fields ? { fields } : {}) });
  return { list, report };
}

async function drain(appender: { uploadOnce(): Promise<string> }) {
  for (let i = 0; i < 1000; i++) {
    const step = await appender.uploadOnce();
    if (step !== 'sent') return step;
  }
  throw new Error('did not drain');
}

describe('cloud log upload (A4.7) with an on-disk spool', () => {
  it('sends in batches of at most 1000, in order, removing entries only once acknowledged', async () => {
    const cloud = fakeCloud();
    const time = manualClock();
    const appender = createNetAppender({ send: cloud.send, clock: time.clock, report: () => {} });
    for (let i = 0; i < 2500; i++) appender.append(entry(i));
    assert.equal(await drain(appender), 'idle');
    assert.deepEqual(
      cloud.batches.map((batch) => batch.length),
      [1000, 1000, 500],
    );
    assert.deepEqual(
      cloud.received(),
      Array.from({ length: 2500 }, (_, i) => `m${i}`),
    );
    assert.equal(appender.stats().sent, 2500);
  });

  it('offline: spools to disk, retries every 5 s, then drains oldest first with nothing lost or duplicated', async () => {
    const cloud = fakeCloud();
    const time = manualClock();
    const { list, report } = reports();
    const spool = openLogSpool({ directory: path.join(dir, 'offline'), entriesPerSegment: 1000 });
    const appender = createNetAppender({ send: cloud.send, spool, clock: time.clock, report });
    for (let i = 0; i < 10; i++) appender.append(entry(i));
    await appender.uploadOnce();
    cloud.setUp(false);
    for (let i = 10; i < 20; i++) appender.append(entry(i));
    assert.equal(await appender.uploadOnce(), 'failed');
    assert.deepEqual(
      list.map((r) => r.message),
      ['error logging to network: connect ECONNREFUSED 127.0.0.1:1'],
    );
    assert.equal(appender.stats().spooled, 10);
    for (let i = 20; i < 1500; i++) appender.append(entry(i));
    assert.equal(await appender.uploadOnce(), 'waiting', 'no attempt before the retry interval');
    assert.equal(appender.stats().spooled, 1490, 'entries logged while offline go to disk');
    time.advance(5_001);
    assert.equal(await appender.uploadOnce(), 'failed');
    assert.equal(list.length, 1, 'the error is reported once per offline period');
    cloud.setUp(true);
    time.advance(5_001);
    assert.equal(await drain(appender), 'idle');
    assert.deepEqual(
      cloud.received(),
      Array.from({ length: 1500 }, (_, i) => `m${i}`),
    );
    assert.ok(cloud.batches.every((batch) => batch.length <= 1000));
    assert.deepEqual(await readdir(path.join(dir, 'offline')), [], 'acknowledged segments are deleted');
  });

  it('the spool is bounded: the oldest entries are dropped and counted in one warning after reconnecting', async () => {
    const cloud = fakeCloud();
    const time = manualClock();
    const { list, report } = reports();
    const spool = openLogSpool({
      directory: path.join(dir, 'bounded'),
      entriesPerSegment: 100,
      maxBytes: 30_000,
    });
    const appender = createNetAppender({
      send: cloud.send,
      spool,
      clock: time.clock,
      report,
      maxBatchEntries: 100,
    });
    cloud.setUp(false);
    appender.append(entry(0));
    await appender.uploadOnce();
    for (let i = 1; i < 1000; i++) appender.append(entry(i));
    await appender.uploadOnce(); // spills to disk while waiting
    const kept = appender.stats().spooled;
    assert.ok(kept < 1000 && spool.sizeBytes <= 30_000, `bounded: ${kept} entries, ${spool.sizeBytes} bytes`);
    cloud.setUp(true);
    time.advance(5_001);
    await drain(appender);
    const received = cloud.received().filter((message) => message.startsWith('m'));
    assert.equal(received.length, kept);
    assert.equal(received.at(-1), 'm999', 'the newest entries survive');
    assert.equal(received[0], `m${1000 - kept}`, 'the oldest were dropped');
    const overflow = list.find((r) => r.message.startsWith('Overflowed'));
    assert.equal(
      overflow?.message,
      `Overflowed ${1000 - kept} logs while offline. Check local system logs for anything important.`,
    );
    assert.equal(overflow?.level, 'warn');
    assert.equal(appender.stats().dropped, 1000 - kept);
  });

  it('without a spool, the memory queue is bounded and the oldest are dropped (the reference behaviour)', async () => {
    const cloud = fakeCloud();
    const { list, report } = reports();
    const appender = createNetAppender({ send: cloud.send, report, maxQueueEntries: 50 });
    for (let i = 0; i < 80; i++) appender.append(entry(i));
    await drain(appender);
    assert.equal(cloud.received()[0], 'm30');
    assert.equal(cloud.received().length, 50);
    assert.match(list[0]?.message ?? '', /^Overflowed 30 logs/);
  });

  it('a batch the cloud rejects as invalid is dropped with an error instead of blocking the queue', async () => {
    const cloud = fakeCloud();
    const { list, report } = reports();
    const appender = createNetAppender({ send: cloud.send, report, maxBatchEntries: 10 });
    for (let i = 0; i < 15; i++) appender.append(entry(i));
    cloud.rejectNext();
    assert.equal(await appender.uploadOnce(), 'rejected');
    await drain(appender);
    assert.deepEqual(cloud.received(), ['m10', 'm11', 'm12', 'm13', 'm14']);
    assert.equal(list[0]?.level, 'error');
    assert.equal(list[0]?.fields?.entries, 10);
  });

  it('close() flushes online; offline it spools what is left, and the next start sends it first', async () => {
    const cloud = fakeCloud();
    const directory = path.join(dir, 'restart');
    const first = createNetAppender({
      send: cloud.send,
      spool: openLogSpool({ directory }),
      report: () => {},
    });
    for (let i = 0; i < 5; i++) first.append(entry(i));
    await first.close({ deadlineMs: 2000 });
    assert.deepEqual(cloud.received(), ['m0', 'm1', 'm2', 'm3', 'm4']);

    const second = createNetAppender({
      send: cloud.send,
      spool: openLogSpool({ directory }),
      report: () => {},
    });
    cloud.setUp(false);
    for (let i = 5; i < 10; i++) second.append(entry(i));
    assert.equal(await second.uploadOnce(), 'failed');
    second.append(entry(10));
    const started = performance.now();
    await second.close({ deadlineMs: 2000 });
    assert.ok(performance.now() - started < 1000, 'offline, close does not wait for the deadline');

    cloud.setUp(true);
    const third = createNetAppender({
      send: cloud.send,
      spool: openLogSpool({ directory }),
      report: () => {},
    });
    third.append(entry(11));
    await drain(third);
    assert.deepEqual(
      cloud.received(),
      Array.from({ length: 12 }, (_, i) => `m${i}`),
    );
    await third.close();
  });

  it('close() gives up at its deadline when the cloud hangs, and keeps the entries in the spool', async () => {
    const directory = path.join(dir, 'hang');
    const hang: SendLogBatch = (_entries, signal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const appender = createNetAppender({ send: hang, spool: openLogSpool({ directory }), report: () => {} });
    for (let i = 0; i < 3; i++) appender.append(entry(i));
    const started = performance.now();
    await appender.close({ deadlineMs: 300 });
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 250 && elapsed < 2000, `closed after ${Math.round(elapsed)} ms`);
    const spool = openLogSpool({ directory });
    assert.equal(spool.entryCount, 3);
    spool.close();
  });
});
