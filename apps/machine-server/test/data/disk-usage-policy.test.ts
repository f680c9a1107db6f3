import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { parseCaptureMethods } from '../../src/data/capture-method-config.ts';
import { startDataManager } from '../../src/data/data-manager.ts';
import { parseDataManagerConfig } from '../../src/data/data-manager-config.ts';
import { applyDeletionPolicy } from '../../src/data/disk-usage-policy.ts';
import { createSilentLogger } from '../../src/logging/logger.ts';
import { createRecordingLogger, fakeSensor, listFiles, makeTempDir, waitFor } from './data-fixtures.ts';

let temp: { dir: string; remove(): Promise<void> };
before(async () => {
  temp = await makeTempDir();
});
after(async () => {
  await temp.remove();
});

async function fillCaptureDir(dir: string, count: number): Promise<string[]> {
  const methodDir = path.join(dir, 'rdk_component_sensor', 's1', 'Readings');
  await mkdir(methodDir, { recursive: true });
  const names: string[] = [];
  for (let index = 0; index < count; index++) {
    const name = `2026-01-01T00_00_${String(index).padStart(2, '0')}.000000Z.capture`;
    await writeFile(path.join(methodDir, name), Buffer.alloc(1000, index));
    names.push(path.join('rdk_component_sensor', 's1', 'Readings', name));
  }
  await writeFile(path.join(methodDir, '2026-01-01T00_01_00.000000Z.prog'), Buffer.alloc(1000));
  await mkdir(path.join(dir, 'failed'), { recursive: true });
  await writeFile(path.join(dir, 'failed', 'kept.capture'), Buffer.alloc(1000));
  return names;
}

test('on a full disk every n-th completed capture file (1st, 6th, 11th…) is deleted, oldest first, skipping uploads', async () => {
  const dir = path.join(temp.dir, 'full');
  const names = await fillCaptureDir(dir, 12);
  const uploading = path.join(dir, names[5] as string);
  const result = await applyDeletionPolicy({
    captureDir: dir,
    // The real statfs of the test's file system: any used fraction passes a tiny threshold.
    diskUsageDeletionThreshold: 1e-9,
    captureDirDeletionThreshold: 1e-12,
    deleteEveryNth: 5,
    isUploading: (filePath) => filePath === uploading,
    logger: createSilentLogger(),
  });
  assert.equal(result.action, 'deleted');
  assert.equal(result.deletedFiles, 2);
  assert.ok(result.usedFraction > 0 && result.usedFraction < 1);
  assert.ok(result.captureDirBytes >= 14_000, 'failed/ and .prog files count towards the size');
  const left = await listFiles(dir);
  assert.ok(!left.includes(names[0] as string), '1st deleted');
  assert.ok(left.includes(names[5] as string), '6th kept: it is being uploaded');
  assert.ok(!left.includes(names[10] as string), '11th deleted');
  assert.equal(left.filter((name) => name.endsWith('.capture')).length, 12 - 2 + 1);
  assert.ok(left.includes('failed/kept.capture'), 'failed/ is never pruned');
  assert.ok(
    left.some((name) => name.endsWith('.prog')),
    'open files are never pruned',
  );
});

test('below the thresholds nothing is deleted; a full disk with a small capture dir only warns', async () => {
  const dir = path.join(temp.dir, 'share');
  await fillCaptureDir(dir, 6);
  const logger = createRecordingLogger();
  const base = { captureDir: dir, deleteEveryNth: 5, isUploading: () => false, logger };
  const notFull = await applyDeletionPolicy({
    ...base,
    diskUsageDeletionThreshold: 1,
    captureDirDeletionThreshold: 1e-12,
  });
  assert.equal(notFull.action, 'none');
  const belowShare = await applyDeletionPolicy({
    ...base,
    diskUsageDeletionThreshold: 1e-9,
    captureDirDeletionThreshold: 0.99,
  });
  assert.equal(belowShare.action, 'below-share');
  assert.ok(
    logger.entries.some(
      (entry) => entry.level === 'warn' && /below .* file deletion will not run/.test(entry.message),
    ),
  );
  assert.equal((await listFiles(dir)).filter((name) => name.endsWith('.capture')).length, 7);
});

test('the data manager runs the policy while capturing (small thresholds) and not when capture is disabled', async () => {
  const dir = path.join(temp.dir, 'running');
  const sensor = fakeSensor('s1', (call) => ({ seq: call, pad: 'x'.repeat(200) }));
  const manager = await startDataManager({
    name: { api: { namespace: 'rdk', type: 'service', subtype: 'data_manager' }, remotePath: [], name: 'dm' },
    config: parseDataManagerConfig(
      {
        capture_dir: dir,
        sync_disabled: true,
        maximum_capture_file_size_bytes: 100,
        disk_usage_deletion_threshold: 1e-9,
        capture_dir_deletion_threshold: 1e-12,
        delete_every_nth_when_disk_full: 2,
      },
      's',
      { viamHome: temp.dir },
    ),
    targets: [
      {
        resource: sensor,
        methods: parseCaptureMethods(
          [
            {
              type: 'data_manager',
              attributes: { capture_methods: [{ method: 'Readings', capture_frequency_hz: 100 }] },
            },
          ],
          'c',
        ),
      },
    ],
    resources: [sensor],
    cloud: () => undefined,
    logger: createSilentLogger(),
    clock: systemClock,
    deletionCheckIntervalMs: 300,
  });
  try {
    // Every reading makes a file (each exceeds 100 bytes); the policy halves the pile each time it runs.
    await waitFor(async () => sensor.calls() > 60, 10_000, 'captures');
    await waitFor(
      async () => {
        const files = (await listFiles(dir)).filter((name) => name.endsWith('.capture'));
        return files.length < sensor.calls() - 10;
      },
      10_000,
      'deletions',
    );
  } finally {
    await manager.close(AbortSignal.timeout(30_000));
  }

  const disabledDir = path.join(temp.dir, 'disabled');
  const names = await fillCaptureDir(disabledDir, 4);
  const idle = await startDataManager({
    name: {
      api: { namespace: 'rdk', type: 'service', subtype: 'data_manager' },
      remotePath: [],
      name: 'dm2',
    },
    config: parseDataManagerConfig(
      {
        capture_dir: disabledDir,
        capture_disabled: true,
        sync_disabled: true,
        disk_usage_deletion_threshold: 1e-9,
        capture_dir_deletion_threshold: 1e-12,
      },
      's',
      { viamHome: temp.dir },
    ),
    targets: [],
    resources: [],
    cloud: () => undefined,
    logger: createSilentLogger(),
    deletionCheckIntervalMs: 50,
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await idle.close(AbortSignal.timeout(30_000));
  const left = await listFiles(disabledDir);
  for (const name of names) assert.ok(left.includes(name), `${name} kept while capture is disabled`);
});
