import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../../infra/postgres/database.ts';

/**
 * Signed download URLs for binary data: `<publicUrl>/download/<binary data id>?expires=<epoch ms>&sig=<mac>`.
 * The MAC is HMAC-SHA256 over (binary data id, expiry) with a key derived (HKDF) from the shared
 * `signing_keys` rows, so every replica signs and verifies alike and a download needs no bearer token.
 * Signing uses the newest key; verification accepts any stored key (rotation keeps old URLs working
 * until they expire).
 */

export const DOWNLOAD_PATH_PREFIX = '/download/';

export interface SignedUrlDeps {
  db: Queryable;
  config: { publicUrl: string };
}

export type SignedDownloadCheck = { ok: true } | { ok: false; reason: 'expired' | 'invalid' };

interface DerivedKey {
  id: string;
  key: Buffer;
}

// Keys are re-read at most this often, so a key added by another replica is picked up.
const keyCacheTtlMs = 60_000;
const keyCache = new WeakMap<object, { keys: Promise<DerivedKey[]>; loadedAtMs: number }>();
const hkdfInfo = 'mcloud signed download url v1';

async function loadDerivedKeys(db: Queryable): Promise<DerivedKey[]> {
  const rows = await db.query<{ id: string; secret: Buffer }>(
    'SELECT id, secret FROM signing_keys ORDER BY created_at DESC, id DESC',
  );
  if (rows.rows.length === 0) throw new Error('no signing key available');
  return rows.rows.map((row) => ({
    id: row.id,
    key: Buffer.from(hkdfSync('sha256', row.secret, Buffer.alloc(0), hkdfInfo, 32)),
  }));
}

function derivedKeys(db: Queryable): Promise<DerivedKey[]> {
  const cached = keyCache.get(db);
  // performance.now() is monotonic; this is a cache lifetime, not domain time.
  if (cached && performance.now() - cached.loadedAtMs < keyCacheTtlMs) return cached.keys;
  const keys = loadDerivedKeys(db);
  keyCache.set(db, { keys, loadedAtMs: performance.now() });
  keys.catch(() => keyCache.delete(db));
  return keys;
}

function mac(key: Buffer, binaryDataId: string, expiresAtMs: number): Buffer {
  return createHmac('sha256', key).update(`v1\n${binaryDataId}\n${expiresAtMs}`).digest();
}

/** The URL path (without origin and query) under which a binary item is downloaded. */
export function downloadPathOf(binaryDataId: string): string {
  return `${DOWNLOAD_PATH_PREFIX}${binaryDataId.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * A URL that downloads `binaryDataId` without a token until `expiresAtMs` (epoch milliseconds). Callers
 * validate the lifetime (default 15 min, max 7 days) and that the caller may read the item.
 */
export async function createSignedDownloadUrl(
  deps: SignedUrlDeps,
  binaryDataId: string,
  expiresAtMs: number,
): Promise<string> {
  const expires = Math.floor(expiresAtMs);
  const [newest] = await derivedKeys(deps.db);
  if (!newest) throw new Error('no signing key available');
  const sig = mac(newest.key, binaryDataId, expires).toString('base64url');
  const origin = deps.config.publicUrl.replace(/\/+$/, '');
  return `${origin}${downloadPathOf(binaryDataId)}?expires=${expires}&sig=${sig}`;
}

/** Checks a signature in constant time; expired links report `expired` only when the MAC is valid. */
export async function verifySignedDownload(
  deps: Pick<SignedUrlDeps, 'db'>,
  binaryDataId: string,
  expiresParam: string | null,
  sigParam: string | null,
  nowMs: number,
): Promise<SignedDownloadCheck> {
  if (
    !expiresParam ||
    !sigParam ||
    !/^\d{1,16}$/.test(expiresParam) ||
    !/^[A-Za-z0-9_-]{43}$/.test(sigParam)
  ) {
    return { ok: false, reason: 'invalid' };
  }
  const expires = Number(expiresParam);
  // Compared as text: the last of 43 base64url characters carries 2 unused bits, so two different
  // strings can decode to the same bytes, and an altered link must never verify.
  const given = Buffer.from(sigParam);
  let valid = false;
  for (const { key } of await derivedKeys(deps.db)) {
    const expected = Buffer.from(mac(key, binaryDataId, expires).toString('base64url'));
    if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
  }
  if (!valid) return { ok: false, reason: 'invalid' };
  if (nowMs > expires) return { ok: false, reason: 'expired' };
  return { ok: true };
}
