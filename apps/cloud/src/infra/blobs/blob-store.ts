import type { Readable } from 'node:stream';
import { DomainError } from '../../domain/errors.ts';

/**
 * Binary object storage behind one interface (filesystem or any S3-compatible service). Domain-facing:
 * no transport or SDK types cross it. Every implementation runs `runBlobStoreContract`.
 */
export interface BlobStore {
  /**
   * Streams `body` under `key`, replacing any previous object, and reports its size and SHA-256.
   * Never holds a whole large body in memory. Atomic: until it resolves, readers see the old object
   * (or none); if it fails or is aborted, nothing new is visible under the key.
   */
  put(key: string, body: Readable | Uint8Array, options?: BlobPutOptions): Promise<BlobPutResult>;
  /** Streams an object, or the inclusive byte range of it. Throws `BlobNotFoundError` when missing. */
  get(key: string, options?: BlobGetOptions): Promise<Readable>;
  /** Reads a whole object into memory; for small objects. Throws `BlobNotFoundError` when missing. */
  read(key: string, options?: BlobReadOptions): Promise<Uint8Array>;
  /** The object's size, or `undefined` when there is none. */
  stat(key: string, options?: BlobReadOptions): Promise<BlobStat | undefined>;
  /** Removes an object; removing a missing one succeeds. */
  delete(key: string, options?: BlobReadOptions): Promise<void>;
  /** Removes many objects in batches; missing ones are ignored. */
  deleteMany(keys: readonly string[], options?: BlobReadOptions): Promise<void>;
  /** Releases connections and handles; the store is unusable afterwards. */
  close(): Promise<void>;
}

export interface BlobPutOptions {
  signal?: AbortSignal;
  /**
   * The body's chunks are handed over: each views a buffer of its own that nothing reads after the put
   * consumed it, so the store may free it as soon as it is written (the filesystem store does).
   */
  releaseBodyChunks?: boolean;
}

export interface BlobPutResult {
  sizeBytes: number;
  sha256Hex: string;
}

/** Bytes `start` through `endInclusive` (default: the last byte), zero-based. */
export interface BlobByteRange {
  start: number;
  endInclusive?: number;
}

export interface BlobGetOptions {
  signal?: AbortSignal;
  range?: BlobByteRange;
}

export interface BlobReadOptions {
  signal?: AbortSignal;
}

export interface BlobStat {
  sizeBytes: number;
}

export const MAX_BLOB_KEY_LENGTH = 1024;
/** The longest file name most filesystems allow (NAME_MAX), so the fs store can hold every key. */
export const MAX_BLOB_KEY_SEGMENT_LENGTH = 255;
/** The largest number of keys one S3 DeleteObjects request accepts. */
export const BLOB_DELETE_BATCH_SIZE = 1000;

const KEY_CHARACTERS = /^[A-Za-z0-9/_.=-]+$/;

/** No object is stored under the key. gRPC-aligned code `NotFound`. */
export class BlobNotFoundError extends DomainError {
  readonly key: string;

  constructor(key: string, options?: { cause?: unknown }) {
    super('NotFound', `blob ${JSON.stringify(key)} not found`, options);
    this.name = 'BlobNotFoundError';
    this.key = key;
  }
}

/** The key breaks a key rule; the message names the key and the rule. Code `InvalidArgument`. */
export class InvalidBlobKeyError extends DomainError {
  readonly key: string;

  constructor(key: string, rule: string) {
    super('InvalidArgument', `blob key ${JSON.stringify(truncate(key))}: ${rule}`);
    this.name = 'InvalidBlobKeyError';
    this.key = key;
  }
}

/** The requested range is malformed or starts beyond the object's end. Code `OutOfRange`. */
export class BlobRangeError extends DomainError {
  readonly key: string;

  constructor(key: string, message: string, options?: { cause?: unknown }) {
    super('OutOfRange', `blob ${JSON.stringify(key)}: ${message}`, options);
    this.name = 'BlobRangeError';
    this.key = key;
  }
}

export function isBlobNotFoundError(error: unknown): error is BlobNotFoundError {
  return error instanceof BlobNotFoundError;
}

/**
 * Keys are `/`-separated paths of `[A-Za-z0-9/_.=-]`, at most 1024 characters and 255 per segment,
 * with no leading or trailing `/`, no empty segment, no `.` segment and no `..` anywhere, so that they
 * map to the same object on every backend and can never escape a directory.
 */
export function assertValidBlobKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidBlobKeyError(String(key), 'must not be empty');
  if (key.length > MAX_BLOB_KEY_LENGTH) {
    throw new InvalidBlobKeyError(
      key,
      `must be at most ${MAX_BLOB_KEY_LENGTH} characters (has ${key.length})`,
    );
  }
  if (!KEY_CHARACTERS.test(key)) {
    throw new InvalidBlobKeyError(key, 'may only contain the characters A-Z a-z 0-9 / _ . = -');
  }
  if (key.includes('..')) throw new InvalidBlobKeyError(key, 'must not contain ".."');
  if (key.startsWith('/')) throw new InvalidBlobKeyError(key, 'must not start with "/"');
  if (key.endsWith('/')) throw new InvalidBlobKeyError(key, 'must not end with "/"');
  if (key.includes('//')) throw new InvalidBlobKeyError(key, 'must not contain an empty segment ("//")');
  const segments = key.split('/');
  if (segments.includes('.')) throw new InvalidBlobKeyError(key, 'must not contain a "." segment');
  const longest = Math.max(...segments.map((segment) => segment.length));
  if (longest > MAX_BLOB_KEY_SEGMENT_LENGTH) {
    throw new InvalidBlobKeyError(
      key,
      `each "/"-separated segment must be at most ${MAX_BLOB_KEY_SEGMENT_LENGTH} characters (one has ${longest})`,
    );
  }
}

/** Checks a range's shape (not its fit to an object, which needs the object's size). */
export function assertValidBlobRange(key: string, range: BlobByteRange): void {
  const { start, endInclusive } = range;
  if (!Number.isSafeInteger(start) || start < 0) {
    throw new BlobRangeError(key, `range start must be a non-negative integer (got ${start})`);
  }
  if (endInclusive !== undefined && (!Number.isSafeInteger(endInclusive) || endInclusive < start)) {
    throw new BlobRangeError(
      key,
      `range endInclusive must be an integer >= start ${start} (got ${endInclusive})`,
    );
  }
}

function truncate(text: string): string {
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}
