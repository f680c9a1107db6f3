import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { runBlobStoreContract } from './blob-store.contract.ts';
import { createFsBlobStore } from './fs-blob-store.ts';

const rootDirs: string[] = [];
async function freshRootDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mcloud-fs-blobs-'));
  rootDirs.push(dir);
  return dir;
}
after(async () => {
  await Promise.all(rootDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

runBlobStoreContract('fs', async () =>
  createFsBlobStore({ rootDir: join(await freshRootDir(), 'not-yet-created') }),
);

describe('fs blob store specifics', () => {
  test('objects are plain files at their key; failed and aborted puts leave no temp files', async () => {
    const rootDir = await freshRootDir();
    const store = createFsBlobStore({ rootDir });
    await store.put('a/b/c.txt', Buffer.from('abc'));
    assert.deepEqual(await readdir(join(rootDir, 'a/b')), ['c.txt']);

    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1024));
        this.destroy(new Error('boom'));
      },
    });
    await assert.rejects(store.put('a/b/d.txt', failing), /boom/);
    const controller = new AbortController();
    const stalled = new Readable({
      read() {
        this.push(Buffer.alloc(1024));
        setTimeout(() => controller.abort(), 10);
      },
    });
    await assert.rejects(store.put('a/b/c.txt', stalled, { signal: controller.signal }), {
      name: 'AbortError',
    });
    assert.deepEqual(await readdir(join(rootDir, 'a/b')), ['c.txt']);
  });

  test('a key of four 255-character segments fits the filesystem', async () => {
    const store = createFsBlobStore({ rootDir: await freshRootDir() });
    const key = [1, 2, 3, 4].map((n) => String(n).repeat(255)).join('/');
    await store.put(key, Buffer.from('long'));
    assert.equal(Buffer.from(await store.read(key)).toString(), 'long');
  });

  test('delete prunes directories it leaves empty, and only those', async () => {
    const rootDir = await freshRootDir();
    const store = createFsBlobStore({ rootDir });
    await store.put('x/y/z/1', Buffer.from('1'));
    await store.put('x/keep', Buffer.from('k'));
    await store.delete('x/y/z/1');
    assert.deepEqual(await readdir(join(rootDir, 'x')), ['keep']);
    await store.delete('x/keep');
    assert.deepEqual(await readdir(rootDir), []);
  });

  test("a key that is another key's directory is a FailedPrecondition, not a crash", async () => {
    const store = createFsBlobStore({ rootDir: await freshRootDir() });
    await store.put('p/q', Buffer.from('file'));
    await assert.rejects(store.put('p/q/r', Buffer.from('x')), { code: 'FailedPrecondition' });
    await store.put('m/n/o', Buffer.from('x'));
    await assert.rejects(store.put('m/n', Buffer.from('x')), { code: 'FailedPrecondition' });
    assert.equal(Buffer.from(await store.read('p/q')).toString(), 'file');
  });

  test('a temp file left by a crash is never an object and keeps its directory from being pruned', async () => {
    const rootDir = await freshRootDir();
    const store = createFsBlobStore({ rootDir });
    await store.put('d/x', Buffer.from('x'));
    await writeFile(join(rootDir, 'd/.~put-left-by-crash'), 'partial');
    await store.delete('d/x');
    assert.deepEqual(await readdir(join(rootDir, 'd')), ['.~put-left-by-crash']);
  });
});
