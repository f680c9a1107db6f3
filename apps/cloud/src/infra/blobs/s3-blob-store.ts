import { addAbortSignal, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  type DeleteObjectsCommandOutput,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { DomainError } from '../../domain/errors.ts';
import { createBlobDigestTransform, digestBytes, readBlobStream } from './blob-digest.ts';
import {
  assertValidBlobKey,
  assertValidBlobRange,
  BLOB_DELETE_BATCH_SIZE,
  BlobNotFoundError,
  BlobRangeError,
  type BlobStore,
} from './blob-store.ts';

export interface S3BlobStoreOptions {
  /** e.g. `http://127.0.0.1:9000` for MinIO; omit for AWS S3. */
  endpoint?: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Path-style URLs (`endpoint/bucket/key`); most self-hosted S3 servers need it. */
  forcePathStyle?: boolean;
  /** Key prefix inside the bucket, e.g. `mcloud`; keys are stored as `<prefix>/<key>`. */
  prefix?: string;
  /** Part size of multipart uploads of streamed bodies (min 5 MiB, the S3 minimum). Default 5 MiB. */
  multipartPartSizeBytes?: number;
  /**
   * Parts uploaded in parallel per put. Memory per streamed put is about (queue size + 1) × part size,
   * so the default 1 keeps a put near 10 MiB; raise it for throughput to distant S3 endpoints.
   */
  multipartQueueSize?: number;
}

const MIN_PART_SIZE_BYTES = 5 * 1024 * 1024;
const DEFAULT_QUEUE_SIZE = 1;

/**
 * Objects in one bucket of any S3-compatible service. Streamed bodies go up as multipart uploads of
 * bounded memory (`@aws-sdk/lib-storage`), which S3 makes visible only on completion and which are
 * aborted on failure; byte bodies go up in one PutObject. SDK errors never leave this file raw:
 * missing objects become `BlobNotFoundError`, unsatisfiable ranges `BlobRangeError`, the rest
 * `DomainError('Unavailable')` naming the operation, the key and the S3 error code.
 */
export function createS3BlobStore(options: S3BlobStoreOptions): BlobStore {
  const partSize = options.multipartPartSizeBytes ?? MIN_PART_SIZE_BYTES;
  if (!Number.isSafeInteger(partSize) || partSize < MIN_PART_SIZE_BYTES) {
    throw new DomainError(
      'InvalidArgument',
      `multipartPartSizeBytes must be an integer of at least ${MIN_PART_SIZE_BYTES} (got ${partSize})`,
    );
  }
  const queueSize = options.multipartQueueSize ?? DEFAULT_QUEUE_SIZE;
  if (!Number.isSafeInteger(queueSize) || queueSize < 1) {
    throw new DomainError(
      'InvalidArgument',
      `multipartQueueSize must be a positive integer (got ${queueSize})`,
    );
  }
  const prefix = options.prefix?.replace(/\/+$/, '') ?? '';
  if (prefix !== '') assertValidBlobKey(prefix);
  const { bucket } = options;
  const client = new S3Client({
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    region: options.region,
    forcePathStyle: options.forcePathStyle ?? false,
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
    // Checksums only where S3 demands them: the default "when supported" sends aws-chunked bodies with
    // trailing CRCs that many S3-compatible servers do not understand; SigV4 already signs the payload.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const objectKey = (key: string): string => {
    assertValidBlobKey(key);
    return prefix === '' ? key : `${prefix}/${key}`;
  };

  async function putStream(key: string, body: Readable, signal: AbortSignal | undefined) {
    const digest = createBlobDigestTransform();
    // An abort destroys the body stream, which fails the upload before it commits. The upload gets no
    // abort controller of its own: lib-storage would reject at once yet let an in-flight PutObject
    // finish, making an object visible after put() has failed.
    let bodyError: unknown;
    const piping = pipeline(body, digest.transform, signal ? { signal } : {});
    piping.catch((error: unknown) => {
      bodyError ??= error;
    });
    const upload = new Upload({
      client,
      params: { Bucket: bucket, Key: objectKey(key), Body: digest.transform },
      partSize,
      queueSize,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      await Promise.resolve(); // let a failed body report first
      const failedBody = bodyError;
      digest.transform.destroy();
      await piping.catch(() => {});
      signal?.throwIfAborted();
      if (failedBody !== undefined) throw failedBody; // the caller's stream failed, not S3
      throw mapS3Error(error, 'put', key);
    }
    await piping;
    return digest.result();
  }

  const store: BlobStore = {
    async put(key, body, putOptions = {}) {
      const { signal } = putOptions;
      const target = objectKey(key);
      signal?.throwIfAborted();
      if (!(body instanceof Uint8Array)) return putStream(key, body, signal);
      try {
        await client.send(
          new PutObjectCommand({ Bucket: bucket, Key: target, Body: body, ContentLength: body.byteLength }),
          { abortSignal: signal },
        );
      } catch (error) {
        throw mapS3Error(error, 'put', key);
      }
      return digestBytes(body);
    },

    async get(key, getOptions = {}) {
      const { signal, range } = getOptions;
      const target = objectKey(key);
      if (range) assertValidBlobRange(key, range);
      try {
        const response = await client.send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: target,
            ...(range ? { Range: `bytes=${range.start}-${range.endInclusive ?? ''}` } : {}),
          }),
          { abortSignal: signal },
        );
        if (!(response.Body instanceof Readable)) {
          throw new DomainError('Internal', `S3 get of blob ${JSON.stringify(key)} returned no Node stream`);
        }
        // Our own abort wiring makes an aborted body fail with AbortError rather than "aborted".
        return signal ? addAbortSignal(signal, response.Body) : response.Body;
      } catch (error) {
        throw mapS3Error(error, 'get', key);
      }
    },

    async read(key, readOptions = {}) {
      return readBlobStream(await store.get(key, readOptions));
    },

    async stat(key, statOptions = {}) {
      const target = objectKey(key);
      try {
        const response = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: target }), {
          abortSignal: statOptions.signal,
        });
        return { sizeBytes: response.ContentLength ?? 0 };
      } catch (error) {
        const mapped = mapS3Error(error, 'stat', key);
        if (mapped instanceof BlobNotFoundError) return undefined;
        throw mapped;
      }
    },

    async delete(key, deleteOptions = {}) {
      const target = objectKey(key);
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: target }), {
          abortSignal: deleteOptions.signal,
        });
      } catch (error) {
        const mapped = mapS3Error(error, 'delete', key);
        if (mapped instanceof BlobNotFoundError) return;
        throw mapped;
      }
    },

    async deleteMany(keys, deleteOptions = {}) {
      const targets = [...new Set(keys.map(objectKey))];
      for (let offset = 0; offset < targets.length; offset += BLOB_DELETE_BATCH_SIZE) {
        const batch = targets.slice(offset, offset + BLOB_DELETE_BATCH_SIZE);
        let response: DeleteObjectsCommandOutput;
        try {
          response = await client.send(
            new DeleteObjectsCommand({
              Bucket: bucket,
              Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
            }),
            { abortSignal: deleteOptions.signal },
          );
        } catch (error) {
          throw mapS3Error(error, 'deleteMany', batch[0] ?? '');
        }
        const failures = (response.Errors ?? []).filter((failure) => failure.Code !== 'NoSuchKey');
        if (failures.length > 0) {
          const shown = failures
            .slice(0, 5)
            .map((failure) => `${failure.Key}: ${failure.Code} ${failure.Message ?? ''}`.trim())
            .join('; ');
          throw new DomainError(
            'Unavailable',
            `S3 deleteMany failed for ${failures.length} of ${batch.length} blobs (${shown})`,
          );
        }
      }
    },

    async close() {
      client.destroy();
    },
  };
  return store;
}

function mapS3Error(error: unknown, operation: string, key: string): unknown {
  if (error instanceof DomainError) return error;
  if (error instanceof Error && error.name === 'AbortError') return error;
  if (!(error instanceof S3ServiceException)) {
    if (error instanceof Error) {
      return new DomainError(
        'Unavailable',
        `S3 ${operation} of blob ${JSON.stringify(key)} failed: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    return error;
  }
  const status = error.$metadata.httpStatusCode;
  if (error.name === 'NoSuchKey' || error.name === 'NotFound' || status === 404) {
    return new BlobNotFoundError(key, { cause: error });
  }
  if (error.name === 'InvalidRange' || status === 416) {
    return new BlobRangeError(key, 'range start is beyond the end of the object', { cause: error });
  }
  return new DomainError(
    'Unavailable',
    `S3 ${operation} of blob ${JSON.stringify(key)} failed: ${error.name} (HTTP ${status ?? '?'}): ${error.message}`,
    { cause: error },
  );
}
