import type { BlobStore } from './blob-store.ts';
import { createFsBlobStore, type FsBlobStoreOptions } from './fs-blob-store.ts';
import { createS3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.ts';

export type BlobStoreConfig = ({ kind: 'fs' } & FsBlobStoreOptions) | ({ kind: 's3' } & S3BlobStoreOptions);

export function createBlobStore(config: BlobStoreConfig): BlobStore {
  switch (config.kind) {
    case 'fs': {
      const { kind: _kind, ...options } = config;
      return createFsBlobStore(options);
    }
    case 's3': {
      const { kind: _kind, ...options } = config;
      return createS3BlobStore(options);
    }
  }
}
