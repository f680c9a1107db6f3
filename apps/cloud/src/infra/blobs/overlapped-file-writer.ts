import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { BlobPutResult } from './blob-store.ts';

/**
 * Bytes received while a write is in flight that may wait for the next one (bounds memory per put: at
 * most this much waits while a batch of at most this much is being written).
 */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;

/**
 * Writes a byte stream to a file while hashing it. Network receive and disk writes overlap: chunks that
 * arrive while a write is in flight are gathered and go down in ONE `writev`, so a stream of small
 * messages (64 KiB upload chunks) costs few system calls and never waits for the disk chunk by chunk.
 * At most MAX_PENDING_BYTES wait in memory; beyond that the reader pauses (backpressure to the client).
 * The caller ends the iteration on abort (e.g. `addAbortSignal` on the source stream).
 *
 * `releaseWrittenChunks`: the caller hands the chunks over (each is a message buffer of its own that
 * nothing reads again, like a FileUpload chunk); once written, their memory is freed at once rather than
 * piling up until V8's next GC, which for a 100 MiB upload is tens of MiB of resident memory.
 */
export async function writeStreamToFile(
  handle: Pick<FileHandle, 'writev'>,
  source: AsyncIterable<Uint8Array>,
  signal?: AbortSignal,
  options: { releaseWrittenChunks?: boolean } = {},
): Promise<BlobPutResult> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let inFlight: Promise<void> | undefined;
  let failure: unknown;

  const drain = async (): Promise<void> => {
    try {
      while (pending.length > 0) {
        const batch = pending;
        pending = [];
        pendingBytes = 0;
        await writevFully(handle, batch);
        if (options.releaseWrittenChunks) for (const chunk of batch) releaseChunk(chunk);
      }
    } catch (error) {
      failure = error;
    } finally {
      inFlight = undefined;
    }
  };

  try {
    for await (const chunk of source) {
      signal?.throwIfAborted();
      if (failure) throw failure;
      if (chunk.byteLength === 0) continue;
      hash.update(chunk);
      sizeBytes += chunk.byteLength;
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      inFlight ??= drain();
      if (pendingBytes >= MAX_PENDING_BYTES) await inFlight;
    }
  } finally {
    // Never leave a write running on a handle the caller is about to close.
    while (inFlight) await inFlight;
  }
  if (failure) throw failure;
  signal?.throwIfAborted();
  return { sizeBytes, sha256Hex: hash.digest('hex') };
}

// Slack allowed between a chunk and the buffer it views (a protobuf field's tag and length prefix).
const maxReleaseSlackBytes = 64;
const minReleaseBytes = 16 * 1024;

/**
 * Frees a written chunk's memory now instead of at the next GC, by detaching its ArrayBuffer
 * (`transfer(0)`). Only a chunk that views (nearly) all of a large buffer of its own is released, never a
 * slice of a shared one (Buffer's 8 KiB pool, a concatenation of several messages): the caller vouches
 * that nothing else reads the chunk's buffer afterwards.
 */
function releaseChunk(chunk: Uint8Array): void {
  const buffer = chunk.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.detached) return;
  if (buffer.byteLength < minReleaseBytes || buffer.byteLength - chunk.byteLength > maxReleaseSlackBytes)
    return;
  buffer.transfer(0);
}

async function writevFully(handle: Pick<FileHandle, 'writev'>, buffers: Uint8Array[]): Promise<void> {
  let remaining = buffers;
  while (remaining.length > 0) {
    const total = remaining.reduce((sum, buffer) => sum + buffer.byteLength, 0);
    const { bytesWritten } = await handle.writev(remaining);
    if (bytesWritten === total) return;
    remaining = skipBytes(remaining, bytesWritten);
  }
}

/** The buffers left after the first `count` bytes were written (a short write). */
function skipBytes(buffers: Uint8Array[], count: number): Uint8Array[] {
  let skipped = count;
  const rest: Uint8Array[] = [];
  for (const buffer of buffers) {
    if (skipped >= buffer.byteLength) {
      skipped -= buffer.byteLength;
      continue;
    }
    rest.push(skipped > 0 ? buffer.subarray(skipped) : buffer);
    skipped = 0;
  }
  return rest;
}
