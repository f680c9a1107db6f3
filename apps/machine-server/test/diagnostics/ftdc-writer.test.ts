/**
 * The FTDC writer on a real file system (machine-runtime.md A6): roll-over at the size limit (never twice
 * within one second: the file name has second resolution), retention of the newest files, modes 0755 /
 * 0644 whatever the umask, and every file readable on its own (each starts with a schema document).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createFtdcWriter, ftdcFileName } from '../../src/diagnostics/ftdc-writer.ts';
import { decodeFtdc } from './ftdc-decode.ts';

test('rolls over at the size limit, keeps the newest files, and each file decodes alone', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'ftdc-writer-'));
  const directory = path.join(root, 'diagnostics.data', 'local-config');
  const previousUmask = process.umask(0o077);
  try {
    const writer = createFtdcWriter({ directory, maxFileBytes: 100, maxFiles: 3 });
    const start = Date.UTC(2026, 0, 2, 3, 4, 5);
    const seen: string[] = [];
    // Ten samples per second for 8 seconds: each file passes 100 bytes within its first second.
    for (let i = 0; i < 80; i++) {
      await writer.write(new Date(start + i * 100), { a: i, b: i % 2, c: 7 });
      const current = path.basename(writer.currentFile() ?? '');
      if (seen.at(-1) !== current) seen.push(current);
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 8 }, (_, second) => ftdcFileName(new Date(start + second * 1000))),
      'one file per second: rolled over at the first write past the limit in a new second',
    );
    assert.equal(seen[0], 'machine-server-2026-01-02T03-04-05Z.ftdc');
    const kept = (await readdir(directory)).sort();
    assert.deepEqual(kept, seen.slice(-3), 'only the newest 3 files are kept');
    assert.equal((await stat(directory)).mode & 0o777, 0o755);
    for (const name of kept) {
      assert.equal((await stat(path.join(directory, name))).mode & 0o777, 0o644);
      const samples = decodeFtdc(await readFile(path.join(directory, name)));
      assert.equal(samples.length, 10);
      const second = seen.indexOf(name);
      assert.deepEqual(
        samples.map((sample) => sample.metrics.a),
        Array.from({ length: 10 }, (_, i) => second * 10 + i),
      );
      assert.ok(samples.every((sample) => sample.metrics.c === 7));
    }
  } finally {
    process.umask(previousUmask);
    await rm(root, { recursive: true, force: true });
  }
});
