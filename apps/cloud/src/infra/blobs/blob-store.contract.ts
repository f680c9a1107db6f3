import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BlobNotFoundError, BlobRangeError, type BlobStore, InvalidBlobKeyError } from './blob-store.ts';

export interface BlobStoreContractOptions {
  /**
   * Live buffer memory the store may hold while streaming the large body (sampled after forced
   * collections). Default 8 MiB. Must be well below `streamedBodyBytes` for the test to mean anything.
   */
  streamingMemoryBudgetBytes?: number;
  /** Size of the generated large body. Default 20 MiB. */
  streamedBodyBytes?: number;
}

const MiB = 1024 * 1024;

/**
 * The behaviour every `BlobStore` implementation must show. Each implementation's test file calls
 * this with a factory for a fresh, empty store; the store is closed after the suite.
 */
export function runBlobStoreContract(
  name: string,
  makeStore: () => Promise<BlobStore>,
  options: BlobStoreContractOptions = {},
): void {
  describe(`BlobStore contract: ${name}`, () => {
    let store: BlobStore;
    before(async () => {
      store = await makeStore();
    });
    after(async () => {
      await store?.close();
    });

    test('put then get and read return the same bytes, with size and sha256', async () => {
      const body = new TextEncoder().encode('hello, machine cloud');
      const result = await store.put('roundtrip/hello.txt', body);
      assert.deepEqual(result, { sizeBytes: body.byteLength, sha256Hex: sha256Hex(body) });
      assert.deepEqual(await collect(await store.get('roundtrip/hello.txt')), Buffer.from(body));
      assert.deepEqual(Buffer.from(await store.read('roundtrip/hello.txt')), Buffer.from(body));
      assert.deepEqual(await store.stat('roundtrip/hello.txt'), { sizeBytes: body.byteLength });
    });

    test('a streamed body gives the same size and sha256 as the bytes it carried', async () => {
      const chunks = [Buffer.from('part one, '), Buffer.from('part two, '), Buffer.from('part three')];
      const whole = Buffer.concat(chunks);
      const result = await store.put('roundtrip/streamed.bin', Readable.from(chunks));
      assert.deepEqual(result, { sizeBytes: whole.length, sha256Hex: sha256Hex(whole) });
      assert.deepEqual(Buffer.from(await store.read('roundtrip/streamed.bin')), whole);
    });

    test('an empty object has size 0 and the sha256 of nothing', async () => {
      const result = await store.put('roundtrip/empty', new Uint8Array(0));
      assert.deepEqual(result, { sizeBytes: 0, sha256Hex: sha256Hex(new Uint8Array(0)) });
      assert.equal((await store.read('roundtrip/empty')).byteLength, 0);
      assert.deepEqual(await store.stat('roundtrip/empty'), { sizeBytes: 0 });
    });

    test('keys use every allowed character', async () => {
      const key = 'orgs/0a-B_9/part=2024.01/x-y_z.bin';
      await store.put(key, Buffer.from('k'));
      assert.equal(Buffer.from(await store.read(key)).toString(), 'k');
    });

    test('ranges return the requested inclusive bytes and clamp the end', async () => {
      const body = Buffer.from('0123456789');
      await store.put('ranges/digits', body);
      const read = async (range: { start: number; endInclusive?: number }) =>
        (await collect(await store.get('ranges/digits', { range }))).toString();
      assert.equal(await read({ start: 0, endInclusive: 0 }), '0');
      assert.equal(await read({ start: 2, endInclusive: 5 }), '2345');
      assert.equal(await read({ start: 7 }), '789');
      assert.equal(await read({ start: 9, endInclusive: 9 }), '9');
      assert.equal(await read({ start: 8, endInclusive: 1000 }), '89');
      await assert.rejects(store.get('ranges/digits', { range: { start: 10 } }), BlobRangeError);
      await assert.rejects(
        store.get('ranges/digits', { range: { start: 5, endInclusive: 4 } }),
        BlobRangeError,
      );
      await assert.rejects(store.get('ranges/digits', { range: { start: -1 } }), BlobRangeError);
    });

    test('put overwrites an existing object', async () => {
      await store.put('overwrite/x', Buffer.from('first version, longer'));
      const result = await store.put('overwrite/x', Buffer.from('second'));
      assert.equal(result.sizeBytes, 6);
      assert.equal(Buffer.from(await store.read('overwrite/x')).toString(), 'second');
      assert.deepEqual(await store.stat('overwrite/x'), { sizeBytes: 6 });
    });

    test('a missing key: get and read throw BlobNotFoundError, stat gives undefined', async () => {
      await assert.rejects(store.get('missing/nothing-here'), (error: unknown) => {
        assert.ok(error instanceof BlobNotFoundError);
        assert.equal(error.code, 'NotFound');
        assert.equal(error.key, 'missing/nothing-here');
        assert.match(error.message, /missing\/nothing-here/);
        return true;
      });
      await assert.rejects(store.read('missing/nothing-here'), BlobNotFoundError);
      await assert.rejects(store.get('missing/nothing-here', { range: { start: 1 } }), BlobNotFoundError);
      assert.equal(await store.stat('missing/nothing-here'), undefined);
    });

    test('a key prefix is not an object', async () => {
      await store.put('prefix/child/leaf', Buffer.from('leaf'));
      assert.equal(await store.stat('prefix/child'), undefined);
      await assert.rejects(store.get('prefix/child'), BlobNotFoundError);
      await store.delete('prefix/child');
      assert.equal(Buffer.from(await store.read('prefix/child/leaf')).toString(), 'leaf');
    });

    test('delete removes an object and is idempotent', async () => {
      await store.put('delete/one', Buffer.from('x'));
      await store.delete('delete/one');
      assert.equal(await store.stat('delete/one'), undefined);
      await assert.rejects(store.get('delete/one'), BlobNotFoundError);
      await store.delete('delete/one');
      await store.delete('delete/never-existed');
    });

    test('deleteMany removes every listed key, ignores missing ones and keeps the rest', async () => {
      const keys = Array.from({ length: 25 }, (_, i) => `delete-many/item-${i}`);
      await Promise.all(keys.map((key) => store.put(key, Buffer.from(key))));
      await store.put('delete-many/keep', Buffer.from('keep'));
      await store.deleteMany([...keys, 'delete-many/never-existed', keys[0] ?? '']);
      for (const key of keys) assert.equal(await store.stat(key), undefined, key);
      assert.equal(Buffer.from(await store.read('delete-many/keep')).toString(), 'keep');
      await store.deleteMany([]);
    });

    test('deleteMany handles more keys than one batch of 1000', async () => {
      const keys = Array.from({ length: 1005 }, (_, i) => `delete-batch/k${i}`);
      await store.put('delete-batch/k1004', Buffer.from('last'));
      await store.put('delete-batch/k3', Buffer.from('early'));
      await store.deleteMany(keys);
      assert.equal(await store.stat('delete-batch/k1004'), undefined);
      assert.equal(await store.stat('delete-batch/k3'), undefined);
    });

    test('invalid keys are rejected by every method with InvalidBlobKeyError naming key and rule', async () => {
      const invalid: [string, RegExp][] = [
        ['', /empty/],
        ['/leading-slash', /start with "\/"/],
        ['trailing-slash/', /end with "\/"/],
        ['a//b', /empty segment/],
        ['a/../b', /"\.\."/],
        ['..', /"\.\."/],
        ['a/./b', /"\." segment/],
        ['spaces are bad', /characters/],
        ['unicodé', /characters/],
        ['back\\slash', /characters/],
        ['tilde~', /characters/],
        ['x'.repeat(1025), /at most 1024/],
        [`a/${'x'.repeat(256)}/b`, /segment must be at most 255/],
      ];
      for (const [key, rule] of invalid) {
        const check = (error: unknown) => {
          assert.ok(error instanceof InvalidBlobKeyError, `${JSON.stringify(key)}: ${String(error)}`);
          assert.equal(error.code, 'InvalidArgument');
          assert.match(error.message, rule);
          if (key.length > 0 && key.length < 90) assert.ok(error.message.includes(JSON.stringify(key)));
          return true;
        };
        await assert.rejects(store.put(key, Buffer.from('x')), check);
        await assert.rejects(store.put(key, Readable.from([Buffer.from('x')])), check);
        await assert.rejects(store.get(key), check);
        await assert.rejects(store.read(key), check);
        await assert.rejects(store.stat(key), check);
        await assert.rejects(store.delete(key), check);
        await assert.rejects(store.deleteMany(['fine/key', key]), check);
      }
      const longest = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => String(n).repeat(127)).join('/');
      assert.equal(longest.length, 1023);
      await store.put(longest, Buffer.from('longest key'));
      assert.deepEqual(await store.stat(longest), { sizeBytes: 11 });
    });

    const STREAMED_BODY_BYTES = options.streamedBodyBytes ?? 20 * MiB;
    test(`a ${STREAMED_BODY_BYTES / MiB} MiB generated stream is stored without materialising it`, async (t) => {
      const gc = forcedGc();
      gc();
      const baseline = process.memoryUsage().arrayBuffers;
      let peak = 0;
      const body = generatedStream(STREAMED_BODY_BYTES, 7, () => {
        gc();
        peak = Math.max(peak, process.memoryUsage().arrayBuffers - baseline);
      });
      const result = await store.put('large/generated.bin', body.stream);
      assert.deepEqual(result, { sizeBytes: STREAMED_BODY_BYTES, sha256Hex: body.sha256Hex() });
      assert.deepEqual(await store.stat('large/generated.bin'), { sizeBytes: STREAMED_BODY_BYTES });
      const budget = options.streamingMemoryBudgetBytes ?? 8 * MiB;
      t.diagnostic(`live buffers peaked at ${(peak / MiB).toFixed(1)} MiB (budget ${budget / MiB} MiB)`);
      assert.ok(
        peak < budget,
        `held ${(peak / MiB).toFixed(1)} MiB while streaming (budget ${budget / MiB} MiB)`,
      );

      const readBack = createHash('sha256');
      let readBytes = 0;
      for await (const chunk of await store.get('large/generated.bin')) {
        readBack.update(chunk as Buffer);
        readBytes += (chunk as Buffer).length;
      }
      assert.equal(readBytes, STREAMED_BODY_BYTES);
      assert.equal(readBack.digest('hex'), result.sha256Hex);

      const tail = await collect(
        await store.get('large/generated.bin', { range: { start: STREAMED_BODY_BYTES - 5 } }),
      );
      assert.deepEqual(tail, generatedBytes(STREAMED_BODY_BYTES, 7).subarray(STREAMED_BODY_BYTES - 5));
      await store.delete('large/generated.bin');
    });

    test('an aborted put leaves no object, and an aborted overwrite leaves the old one', async () => {
      for (const key of ['abort/fresh', 'abort/existing']) {
        if (key === 'abort/existing') await store.put(key, Buffer.from('old content'));
        const controller = new AbortController();
        const body = endlessStream(() => controller.abort(), 6 * MiB);
        await assert.rejects(store.put(key, body, { signal: controller.signal }), { name: 'AbortError' });
        if (key === 'abort/fresh') {
          assert.equal(await store.stat(key), undefined);
          await assert.rejects(store.get(key), BlobNotFoundError);
        } else {
          assert.equal(Buffer.from(await store.read(key)).toString(), 'old content');
        }
      }
    });

    test('a put with an already aborted signal fails without writing', async () => {
      const controller = new AbortController();
      controller.abort();
      await assert.rejects(store.put('abort/pre', Buffer.from('x'), { signal: controller.signal }), {
        name: 'AbortError',
      });
      await assert.rejects(
        store.put('abort/pre', Readable.from([Buffer.from('x')]), { signal: controller.signal }),
        {
          name: 'AbortError',
        },
      );
      assert.equal(await store.stat('abort/pre'), undefined);
    });

    test('a body stream that fails leaves nothing and reports the stream error', async () => {
      const failing = new Readable({
        read() {
          this.push(Buffer.alloc(64 * 1024, 1));
          this.destroy(new Error('sensor disconnected'));
        },
      });
      await assert.rejects(store.put('failing/body', failing), /sensor disconnected/);
      assert.equal(await store.stat('failing/body'), undefined);
    });

    test('a get can be aborted while streaming', async () => {
      await store.put('abort-get/data', generatedBytes(2 * MiB, 3));
      const controller = new AbortController();
      const stream = await store.get('abort-get/data', { signal: controller.signal });
      controller.abort();
      await assert.rejects(collect(stream), { name: 'AbortError' });
    });

    test('concurrent puts of different keys all land intact', async () => {
      const bodies = Array.from({ length: 12 }, (_, i) => generatedBytes(64 * 1024 + i * 4099, i));
      const results = await Promise.all(
        bodies.map((body, i) =>
          i % 2 === 0
            ? store.put(`concurrent/${i}`, body)
            : store.put(`concurrent/${i}`, Readable.from([body])),
        ),
      );
      for (const [i, body] of bodies.entries()) {
        assert.deepEqual(results[i], { sizeBytes: body.length, sha256Hex: sha256Hex(body) });
        assert.equal(sha256Hex(await store.read(`concurrent/${i}`)), sha256Hex(body));
      }
    });

    test('concurrent puts of the same key leave one complete version', async () => {
      const bodies = Array.from({ length: 6 }, (_, i) => generatedBytes(256 * 1024, 100 + i));
      await Promise.all(bodies.map((body) => store.put('concurrent/same', Readable.from([body]))));
      const stored = sha256Hex(await store.read('concurrent/same'));
      assert.ok(bodies.some((body) => sha256Hex(body) === stored));
    });
  });
}

function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const CHUNK_BYTES = 64 * 1024;

/** Deterministic pseudo-random bytes: chunk n of seed s is the same however it is produced. */
function generatedChunk(index: number, seed: number, length: number): Buffer {
  const chunk = Buffer.allocUnsafe(length);
  let state = (Math.imul(index + 1, 2654435761) ^ Math.imul(seed + 1, 40503)) >>> 0;
  for (let i = 0; i + 4 <= length; i += 4) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    chunk.writeUInt32LE(state >>> 0, i);
  }
  for (let i = length - (length % 4); i < length; i++) chunk[i] = index & 0xff;
  return chunk;
}

function generatedBytes(totalBytes: number, seed: number): Buffer {
  const chunks: Buffer[] = [];
  for (let offset = 0, index = 0; offset < totalBytes; offset += CHUNK_BYTES, index++) {
    chunks.push(generatedChunk(index, seed, Math.min(CHUNK_BYTES, totalBytes - offset)));
  }
  return Buffer.concat(chunks);
}

/** A pull-driven stream of `totalBytes`; `onMebibyte` runs each time another MiB has been pulled. */
function generatedStream(totalBytes: number, seed: number, onMebibyte: () => void) {
  const hash = createHash('sha256');
  let offset = 0;
  let index = 0;
  const stream = new Readable({
    highWaterMark: CHUNK_BYTES,
    read() {
      if (offset >= totalBytes) {
        this.push(null);
        return;
      }
      if (offset % MiB === 0) onMebibyte();
      const chunk = generatedChunk(index++, seed, Math.min(CHUNK_BYTES, totalBytes - offset));
      offset += chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, sha256Hex: () => hash.digest('hex') };
}

/** Produces `bytesBeforeStall` bytes, calls `onStall`, then never produces more nor ends. */
function endlessStream(onStall: () => void, bytesBeforeStall: number): Readable {
  let produced = 0;
  let stalled = false;
  return new Readable({
    read() {
      if (produced >= bytesBeforeStall) {
        if (!stalled) {
          stalled = true;
          setTimeout(onStall, 50);
        }
        return;
      }
      produced += CHUNK_BYTES;
      this.push(generatedChunk(produced, 1, CHUNK_BYTES));
    },
  });
}

let gcFunction: (() => void) | undefined;
function forcedGc(): () => void {
  if (gcFunction === undefined) {
    setFlagsFromString('--expose-gc');
    gcFunction = runInNewContext('gc') as () => void;
  }
  return gcFunction;
}
