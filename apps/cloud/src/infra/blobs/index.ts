export type {
  BlobByteRange,
  BlobGetOptions,
  BlobPutOptions,
  BlobPutResult,
  BlobReadOptions,
  BlobStat,
  BlobStore,
} from './blob-store.ts';
export {
  assertValidBlobKey,
  BLOB_DELETE_BATCH_SIZE,
  BlobNotFoundError,
  BlobRangeError,
  InvalidBlobKeyError,
  isBlobNotFoundError,
  MAX_BLOB_KEY_LENGTH,
  MAX_BLOB_KEY_SEGMENT_LENGTH,
} from './blob-store.ts';
export { type BlobStoreConfig, createBlobStore } from './create-blob-store.ts';
export { createFsBlobStore, type FsBlobStoreOptions } from './fs-blob-store.ts';
export { createS3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.ts';
