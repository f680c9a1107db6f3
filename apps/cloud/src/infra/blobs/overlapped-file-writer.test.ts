import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { writeStreamToFile } from './overlapped-file-writer.ts';

async function* chunksOf(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < data.length; offset += size) {
    yield data.subarray(offset, offset + size);
    if (offset % (size * 7) === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('writeStreamToFile', () => {
  test('writes every byte in order to a real file and reports size and SHA-256', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'overlapped-writer-'));
    try {
      const data = randomBytes(5 * 1024 * 1024 + 123);
      const file = path.join(dir, 'out');
      const handle = await open(file, 'w');
      const result = await writeStreamToFile(handle, chunksOf(data, 64 * 1024 + 1));
      await handle.close();
      assert.equal(result.sizeBytes, data.length);
      assert.equal(result.sha256Hex, createHash('sha256').update(data).digest('hex'));
      assert.ok((await readFile(file)).equals(data));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('short writes continue where the kernel stopped', async () => {
    const written: Buffer[] = [];
    const stingy = {
      // Accepts at most 1000 bytes per call, like a pipe or a full device would.
      async writev(buffers: readonly NodeJS.ArrayBufferView[]) {
        const all = Buffer.concat(buffers.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)));
        const taken = all.subarray(0, 1000);
        written.push(Buffer.from(taken));
        return { bytesWritten: taken.length, buffers: [...buffers] };
      },
    };
    const data = randomBytes(70_001);
    const result = await writeStreamToFile(stingy as never, chunksOf(data, 4096));
    assert.equal(result.sizeBytes, data.length);
    assert.ok(Buffer.concat(written).equals(data));
  });

  test('a failing write rejects the put instead of dropping bytes', async () => {
    const failing = {
      async writev(): Promise<never> {
        throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      },
    };
    await assert.rejects(
      writeStreamToFile(failing as never, chunksOf(randomBytes(300_000), 1024)),
      /no space left/,
    );
  });
});

describe('writeStreamToFile releaseWrittenChunks', () => {
  const sink = {
    writev: async (buffers: readonly NodeJS.ArrayBufferView[]) => ({
      bytesWritten: buffers.reduce((n, b) => n + b.byteLength, 0),
      buffers,
    }),
  };

  test('frees written chunks that own their buffer, never slices of shared ones', async () => {
    const owned = new Uint8Array(64 * 1024 + 8).subarray(8); // a FileUpload chunk inside its message
    const pooled = Buffer.from('small'); // a slice of Buffer's shared pool
    const shared = new Uint8Array(256 * 1024).subarray(0, 64 * 1024); // a quarter of a bigger buffer
    const small = new Uint8Array(1024);
    async function* chunks() {
      yield owned;
      yield pooled;
      yield shared;
      yield small;
    }
    const result = await writeStreamToFile(sink as never, chunks(), undefined, {
      releaseWrittenChunks: true,
    });
    assert.equal(result.sizeBytes, 64 * 1024 + 5 + 64 * 1024 + 1024);
    assert.equal(owned.buffer.detached, true);
    assert.equal(owned.byteLength, 0);
    assert.equal(pooled.buffer.detached, false);
    assert.equal(pooled.toString(), 'small');
    assert.equal(shared.buffer.detached, false);
    assert.equal(small.buffer.detached, false);
  });

  test('without the option nothing is released', async () => {
    const owned = new Uint8Array(64 * 1024);
    async function* chunks() {
      yield owned;
    }
    await writeStreamToFile(sink as never, chunks());
    assert.equal(owned.buffer.detached, false);
  });
});
