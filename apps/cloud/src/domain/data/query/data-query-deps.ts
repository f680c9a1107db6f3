import type { BlobStore } from '../../../infra/blobs/index.ts';
import type { Database } from '../../../infra/postgres/database.ts';
import type { Clock } from '../../shared/clock.ts';

/** What the data read/tag/delete operations need from the composition root. */
export interface DataQueryDeps {
  db: Database;
  blobs: BlobStore;
  clock: Clock;
  config: { publicUrl: string };
}

export const pageLimits = {
  defaultLimit: 50,
  maxTabularLimit: 1000,
  maxBinaryLimit: 100,
  /** A page stops growing once its payload passes this (responses stay far below 32 MiB). */
  maxPageBytes: 8 * 1024 * 1024,
} as const;

/** `limit` 0 means the default; anything above the cap is served as the cap. */
export function effectiveLimit(limit: number, cap: number): number {
  if (!Number.isFinite(limit) || limit <= 0) return pageLimits.defaultLimit;
  return Math.min(Math.floor(limit), cap);
}
