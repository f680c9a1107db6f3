import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { BlobPutResult } from './blob-store.ts';

/** Bytes received while a write is in flight that may wait for the next one (bounds memory per put). */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

/**
 * Writes a byte stream to a file while hashing it. Network receive and disk writes overlap: chunks that
 * arrive while a write is in flight are gathered and go down in ONE `writev`, so a stream of small
 * messages (64 KiB upload chunks) costs few system calls and never waits for the disk chunk by chunk.
 * At most MAX_PENDING_BYTES wait in memory; beyond that the reader pauses (backpressure to the client).
 * The caller ends the iteration on abort (e.g. `addAbortSignal` on the source stream).
 */
export async function writeStreamToFile(
  handle: Pick<FileHandle, 'writev'>,
  source: AsyncIterable<Uint8Array>,
  signal?: AbortSignal,
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
