import { randomUUID } from 'node:crypto';
import { type FileHandle, mkdir, open, rename, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { addAbortSignal, type Readable } from 'node:stream';
import { DomainError } from '../../domain/errors.ts';
import { blobBodyToReadable, readBlobStream } from './blob-digest.ts';
import {
  assertValidBlobKey,
  assertValidBlobRange,
  BLOB_DELETE_BATCH_SIZE,
  BlobNotFoundError,
  BlobRangeError,
  type BlobStore,
} from './blob-store.ts';
import { writeStreamToFile } from './overlapped-file-writer.ts';

export interface FsBlobStoreOptions {
  /** Directory holding the objects; a key `a/b/c` is the file `<rootDir>/a/b/c`. Created on demand. */
  rootDir: string;
}

/** `~` never occurs in a valid key, so temporary files can never be mistaken for objects. */
const TEMP_FILE_PREFIX = '.~put-';
const DELETE_CONCURRENCY = 16;
const OPEN_ATTEMPTS = 4;

/**
 * Objects as files under one directory, mirroring the S3 layout (so `aws s3 sync` migrates it). Puts
 * stream into a temporary file beside the target, fsync it, rename it over the target and fsync the
 * directory. Deletes prune directories left empty. A key cannot be both an object and the directory
 * of another key's object (`a` and `a/b`); such a put fails with FailedPrecondition.
 */
export function createFsBlobStore(options: FsBlobStoreOptions): BlobStore {
  const rootDir = resolve(options.rootDir);
  const pathOf = (key: string): string => {
    assertValidBlobKey(key);
    return join(rootDir, key);
  };

  async function openTempFile(key: string, tempPath: string): Promise<FileHandle> {
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(dirname(tempPath), { recursive: true });
        return await open(tempPath, 'wx', 0o644);
      } catch (error) {
        // A concurrent delete may prune the directory between mkdir and open: try again.
        if (errorCode(error) === 'ENOENT' && attempt < OPEN_ATTEMPTS) continue;
        if (errorCode(error) === 'ENOTDIR' || errorCode(error) === 'EEXIST') throw keyConflict(key, error);
        throw error;
      }
    }
  }

  async function pruneEmptyDirectories(fromDir: string): Promise<void> {
    for (let dir = fromDir; dir.startsWith(`${rootDir}/`); dir = dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return; // not empty (or already gone, or in use by a put): stop climbing
      }
    }
  }

  async function deleteOne(key: string): Promise<void> {
    const path = pathOf(key);
    try {
      await unlink(path);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return;
      throw error;
    }
    await pruneEmptyDirectories(dirname(path));
  }

  const store: BlobStore = {
    async put(key, body, putOptions = {}) {
      const path = pathOf(key);
      const { signal } = putOptions;
      signal?.throwIfAborted();
      const tempPath = join(dirname(path), `${TEMP_FILE_PREFIX}${randomUUID()}`);
      const handle = await openTempFile(key, tempPath);
      let closed = false;
      try {
        const source = blobBodyToReadable(body);
        const result = await writeStreamToFile(
          handle,
          signal ? addAbortSignal(signal, source) : source,
          signal,
          { releaseWrittenChunks: putOptions.releaseBodyChunks === true },
        );
        await handle.sync();
        closed = true;
        await handle.close();
        signal?.throwIfAborted(); // last moment an abort can still win: nothing is visible yet
        try {
          await rename(tempPath, path);
        } catch (error) {
          if (errorCode(error) === 'EISDIR' || errorCode(error) === 'ENOTEMPTY')
            throw keyConflict(key, error);
          throw error;
        }
        await syncDirectory(dirname(path));
        return result;
      } catch (error) {
        if (!closed) await handle.close().catch(() => {});
        await unlink(tempPath).catch(() => {});
        throw error;
      }
    },

    async get(key, getOptions = {}) {
      const path = pathOf(key);
      const { signal, range } = getOptions;
      if (range) assertValidBlobRange(key, range);
      signal?.throwIfAborted();
      let handle: FileHandle;
      try {
        handle = await open(path, 'r');
      } catch (error) {
        if (isMissing(error)) throw new BlobNotFoundError(key, { cause: error });
        throw error;
      }
      let stream: Readable;
      try {
        const info = await handle.stat();
        if (!info.isFile()) throw new BlobNotFoundError(key);
        if (range && range.start >= info.size) {
          throw new BlobRangeError(
            key,
            `range start ${range.start} is beyond the object's ${info.size} bytes`,
          );
        }
        stream = handle.createReadStream({
          start: range?.start ?? 0,
          end: range?.endInclusive ?? Number.POSITIVE_INFINITY,
          highWaterMark: 256 * 1024,
        });
      } catch (error) {
        await handle.close();
        throw error;
      }
      return signal ? addAbortSignal(signal, stream) : stream;
    },

    async read(key, readOptions = {}) {
      return readBlobStream(await store.get(key, readOptions));
    },

    async stat(key) {
      const path = pathOf(key);
      try {
        const info = await stat(path);
        return info.isFile() ? { sizeBytes: info.size } : undefined;
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },

    async delete(key) {
      await deleteOne(key);
    },

    async deleteMany(keys, deleteOptions = {}) {
      for (const key of keys) assertValidBlobKey(key);
      const unique = [...new Set(keys)];
      for (let offset = 0; offset < unique.length; offset += BLOB_DELETE_BATCH_SIZE) {
        deleteOptions.signal?.throwIfAborted();
        const batch = unique.slice(offset, offset + BLOB_DELETE_BATCH_SIZE);
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < batch.length) {
            const key = batch[next++];
            if (key !== undefined) await deleteOne(key);
          }
        };
        await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, batch.length) }, worker));
      }
    },

    async close() {},
  };
  return store;
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function keyConflict(key: string, cause: unknown): DomainError {
  return new DomainError(
    'FailedPrecondition',
    `blob key ${JSON.stringify(key)} conflicts with another key: the filesystem blob store cannot hold ` +
      'a key that is also the directory part of another key (like "a" and "a/b")',
    { cause },
  );
}

function isMissing(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}
