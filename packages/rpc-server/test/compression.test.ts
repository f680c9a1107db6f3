import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import zlib from 'node:zlib';
import { Code, ConnectError } from '@connectrpc/connect';
import { createInlineGzip } from '../src/compression.ts';

const gzip = createInlineGzip({ inlineMaxBytes: 1024 });
const text = (n: number) => new Uint8Array(Buffer.from('temperature humidity pressure '.repeat(n)));

function assertSameBytes(actual: Uint8Array, expected: Uint8Array): void {
  assert.ok(
    Buffer.from(actual).equals(Buffer.from(expected)),
    `${actual.length} vs ${expected.length} bytes`,
  );
}

async function rejectsWith(promise: Promise<unknown>, code: Code): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConnectError, `expected a ConnectError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

test('compresses small (inline) and large (thread pool) messages into standard gzip', async () => {
  for (const input of [text(10), text(10_000), new Uint8Array(0)]) {
    const compressed = await gzip.compress(input);
    assert.ok(compressed.buffer instanceof ArrayBuffer);
    assertSameBytes(zlib.gunzipSync(compressed), input);
    assertSameBytes(await gzip.decompress(compressed, 1 << 20), input);
  }
});

test('decompresses what zlib compressed, inline or in the pool, up to readMaxBytes', async () => {
  const small = text(20); // 600 bytes: inflates inline
  const large = randomBytes(4000); // incompressible: more than the inline bound both ways
  assertSameBytes(await gzip.decompress(zlib.gzipSync(small), 1 << 20), small);
  assertSameBytes(await gzip.decompress(zlib.gzipSync(large), 1 << 20), large);
  // Small on the wire, large once inflated: passes the inline bound, finished in the pool.
  const bomb = text(5_000); // 150,000 bytes from a few hundred compressed
  const compressedBomb = zlib.gzipSync(bomb);
  assert.ok(compressedBomb.length < 1024);
  assertSameBytes(await gzip.decompress(compressedBomb, 1 << 20), bomb);
});

test('inflating past readMaxBytes is ResourceExhausted, inline and in the pool', async () => {
  const compressed = zlib.gzipSync(text(5_000)); // 150,000 bytes inflated
  await rejectsWith(gzip.decompress(compressed, 512), Code.ResourceExhausted);
  await rejectsWith(gzip.decompress(compressed, 100_000), Code.ResourceExhausted);
});

test('corrupt gzip is InvalidArgument', async () => {
  await rejectsWith(gzip.decompress(new Uint8Array([1, 2, 3, 4, 5]), 1 << 20), Code.InvalidArgument);
  await rejectsWith(gzip.decompress(randomBytes(5000), 1 << 20), Code.InvalidArgument);
});
