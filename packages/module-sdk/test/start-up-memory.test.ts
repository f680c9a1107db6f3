/**
 * releaseStartUpMemory (src/start-up-memory.ts; the machine-server's bin and runModule call it): after
 * a burst of allocation has grown V8's young generation, one call shrinks it again and logs the RSS
 * before and after and the pause; `gc` is neither left as a global nor exposed to later vm contexts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { LogFields } from '../src/logger.ts';
import { releaseStartUpMemory, scheduleStartUpMemoryRelease } from '../src/start-up-memory.ts';

interface Entry {
  level: 'debug' | 'info';
  message: string;
  fields?: LogFields;
}

function createRecordingLogger() {
  const entries: Entry[] = [];
  return {
    entries,
    debug: (message: string, fields?: LogFields) => void entries.push({ level: 'debug', message, fields }),
    info: (message: string, fields?: LogFields) => void entries.push({ level: 'info', message, fields }),
  };
}

const newSpaceBytes = () =>
  getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? Number.NaN;

test('one memory-reducing collection shrinks the young generation and logs what it gave back', () => {
  // Survivors grow the young generation, as loading modules does at start-up.
  let keep: object[] = [];
  for (let i = 0; i < 2_000_000; i++) {
    keep.push({ i, text: `reading ${i}` });
    if (keep.length > 200_000) keep = [];
  }
  const grown = newSpaceBytes();
  assert.ok(grown >= 4 * 2 ** 20, `young generation after the burst: ${grown} bytes`);
  keep = [];

  const logger = createRecordingLogger();
  releaseStartUpMemory(logger);
  assert.ok(newSpaceBytes() < grown / 2, `young generation ${newSpaceBytes()} bytes, was ${grown}`);
  const [entry] = logger.entries;
  assert.equal(entry?.message, 'released start-up memory');
  assert.equal(entry.level, 'info');
  const fields = entry.fields as { rss_mib_before: number; rss_mib_after: number; pause_ms: number };
  assert.ok(
    fields.rss_mib_before > 0 && fields.rss_mib_after > 0 && fields.pause_ms >= 0,
    JSON.stringify(fields),
  );

  assert.equal((globalThis as { gc?: unknown }).gc, undefined);
  assert.equal(runInNewContext('typeof gc'), 'undefined');
});

test('a scheduled release can be cancelled, and logs at the level asked (debug in modules)', async () => {
  const logger = createRecordingLogger();
  const entries: Entry[] = logger.entries;
  const cancel = scheduleStartUpMemoryRelease(10, logger);
  cancel();
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(entries.length, 0);
  scheduleStartUpMemoryRelease(10, logger, 'debug');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(entries[0]?.message, 'released start-up memory');
  assert.equal(entries[0]?.level, 'debug');
});
