import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type S3TestServer, startS3TestServer } from '../../../test/support/s3-test-server.ts';
import { runBlobStoreContract } from './blob-store.contract.ts';
import { createS3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.ts';

let server: S3TestServer | undefined;
let prefixCounter = 0;

async function s3Options(overrides: Partial<S3BlobStoreOptions> = {}): Promise<S3BlobStoreOptions> {
  server ??= await startS3TestServer();
  return {
    endpoint: server.endpoint,
    region: server.region,
    bucket: server.bucket,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    forcePathStyle: true,
    prefix: `suite-${++prefixCounter}`,
    ...overrides,
  };
}

function rawClient(options: S3BlobStoreOptions, secretAccessKey = options.secretAccessKey): S3Client {
  return new S3Client({
    endpoint: options.endpoint ?? '',
    region: options.region,
    forcePathStyle: true,
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

after(async () => {
  await server?.stop();
});

// With the default multipart settings (5 MiB parts, one in flight) a streamed put holds up to about
// three parts: the one in flight, the one being gathered, and the previous one, which lib-storage's
// chunker keeps alive through the subarray of its leftover bytes. Hence a larger body than the default
// 20 MiB, so that a bounded store and one that materialises the body are clearly apart.
runBlobStoreContract('s3', async () => createS3BlobStore(await s3Options()), {
  streamingMemoryBudgetBytes: 20 * 1024 * 1024,
  streamedBodyBytes: 48 * 1024 * 1024,
});

describe('s3 blob store specifics', () => {
  let options: S3BlobStoreOptions;
  before(async () => {
    options = await s3Options({ prefix: 'specifics' });
  });

  test('the test server verifies SigV4: a client with a wrong secret gets SignatureDoesNotMatch', async () => {
    const client = rawClient(options, `${options.secretAccessKey}-wrong`);
    try {
      await assert.rejects(
        client.send(new PutObjectCommand({ Bucket: options.bucket, Key: 'sig/wrong', Body: 'x' })),
        (error: unknown) => {
          assert.equal((error as Error).name, 'SignatureDoesNotMatch');
          assert.equal((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode, 403);
          return true;
        },
      );
      await assert.rejects(client.send(new GetObjectCommand({ Bucket: options.bucket, Key: 'sig/wrong' })), {
        name: 'SignatureDoesNotMatch',
      });
    } finally {
      client.destroy();
    }
    const store = createS3BlobStore({ ...options, secretAccessKey: 'wrong-secret' });
    try {
      await assert.rejects(store.put('sig/store', Buffer.from('x')), (error: unknown) => {
        assert.equal((error as { code?: string }).code, 'Unavailable');
        assert.match((error as Error).message, /SignatureDoesNotMatch/);
        return true;
      });
    } finally {
      await store.close();
    }
  });

  test('the test server rejects an unknown access key and anonymous requests', async () => {
    const client = new S3Client({
      endpoint: options.endpoint ?? '',
      region: options.region,
      forcePathStyle: true,
      credentials: { accessKeyId: 'UNKNOWNKEY', secretAccessKey: options.secretAccessKey },
    });
    try {
      await assert.rejects(client.send(new ListObjectsV2Command({ Bucket: options.bucket })), {
        name: 'InvalidAccessKeyId',
      });
    } finally {
      client.destroy();
    }
    const response = await fetch(`${options.endpoint}/${options.bucket}/specifics/anything`);
    assert.equal(response.status, 403);
    assert.match(await response.text(), /AccessDenied/);
  });

  test('keys live under the configured prefix', async () => {
    const store = createS3BlobStore(options);
    const client = rawClient(options);
    try {
      await store.put('a/b.txt', Buffer.from('prefixed'));
      const listed = await client.send(
        new ListObjectsV2Command({ Bucket: options.bucket, Prefix: 'specifics/' }),
      );
      assert.deepEqual(
        listed.Contents?.map((object) => object.Key),
        ['specifics/a/b.txt'],
      );
    } finally {
      client.destroy();
      await store.close();
    }
  });

  test('options are checked when the store is created', () => {
    assert.throws(() => createS3BlobStore({ ...options, multipartPartSizeBytes: 1024 }), /at least 5242880/);
    assert.throws(() => createS3BlobStore({ ...options, multipartQueueSize: 0 }), /positive integer/);
    assert.throws(() => createS3BlobStore({ ...options, prefix: '../up' }), /"\.\."/);
  });
});
