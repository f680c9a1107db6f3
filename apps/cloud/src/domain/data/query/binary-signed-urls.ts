import type { Principal } from '../../auth/principal.ts';
import { invalidArgument } from '../../errors.ts';
import { createSignedDownloadUrl } from '../signed-urls.ts';
import type { BinaryDataRef } from './binary-data-ids.ts';
import { requireBinaryItem } from './binary-queries.ts';
import type { BinaryItem } from './capture-metadata.ts';
import type { DataQueryDeps } from './data-query-deps.ts';

export const signedUrlLimits = { defaultMinutes: 15, minMinutes: 1, maxMinutes: 10080 } as const;

/** `expiration_minutes`: absent = 15; otherwise 1..10080 (7 days). */
export function signedUrlLifetimeMs(expirationMinutes: number | undefined): number {
  const minutes = expirationMinutes ?? signedUrlLimits.defaultMinutes;
  if (
    !Number.isInteger(minutes) ||
    minutes < signedUrlLimits.minMinutes ||
    minutes > signedUrlLimits.maxMinutes
  ) {
    throw invalidArgument(
      'expiration_minutes',
      `must be between ${signedUrlLimits.minMinutes} and ${signedUrlLimits.maxMinutes} (7 days)`,
      minutes,
    );
  }
  return minutes * 60_000;
}

/** A token-free download link for an item the caller already read. */
export function signedUrlForItem(
  deps: DataQueryDeps,
  item: BinaryItem,
  expiresAtMs: number,
): Promise<string> {
  return createSignedDownloadUrl(deps, item.binaryDataId, expiresAtMs);
}

/** CreateBinaryDataSignedURL: the item must be visible to the caller (unknown and foreign alike NotFound). */
export async function createBinaryDataSignedUrl(
  deps: DataQueryDeps,
  principal: Principal,
  ref: BinaryDataRef,
  shownId: string,
  lifetimeMs: number,
): Promise<{ url: string; expiresAtMs: number }> {
  const item = await requireBinaryItem(deps, principal, ref, shownId);
  const expiresAtMs = deps.clock.nowMs() + lifetimeMs;
  return { url: await signedUrlForItem(deps, item, expiresAtMs), expiresAtMs };
}
