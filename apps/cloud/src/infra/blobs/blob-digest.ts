import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import type { BlobPutResult } from './blob-store.ts';

export interface BlobDigestTransform {
  /** Passes bytes through unchanged while counting and hashing them. */
  transform: Transform;
  /** Size and SHA-256 of everything that passed; call after the stream has ended. */
  result(): BlobPutResult;
}

export function createBlobDigestTransform(): BlobDigestTransform {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  let sha256Hex: string | undefined;
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      sizeBytes += chunk.length;
      callback(null, chunk);
    },
  });
  return {
    transform,
    result() {
      sha256Hex ??= hash.digest('hex');
      return { sizeBytes, sha256Hex };
    },
  };
}

export function digestBytes(body: Uint8Array): BlobPutResult {
  return { sizeBytes: body.byteLength, sha256Hex: createHash('sha256').update(body).digest('hex') };
}

/** A put body as a stream: Uint8Arrays become a one-chunk stream, streams pass through. */
export function blobBodyToReadable(body: Readable | Uint8Array): Readable {
  return body instanceof Uint8Array ? Readable.from([body], { objectMode: false }) : body;
}

export async function readBlobStream(stream: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
