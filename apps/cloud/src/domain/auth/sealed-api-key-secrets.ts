import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Queryable } from '../../infra/postgres/database.ts';
import { loadSigningKeys } from './auth-repository.ts';

/**
 * API key secrets are stored as a hash for authentication, and also sealed (AES-256-GCM, key derived with
 * HKDF from the shared signing key) because machines must receive the secrets of the keys authorized for
 * them in RobotService.Config (wire-protocol §4.2, `auth.handlers`). Only that path opens them.
 */
const ivBytes = 12;
const tagBytes = 16;
const sealingKeys = new WeakMap<object, Promise<Buffer>>();

async function sealingKey(db: Queryable): Promise<Buffer> {
  let key = sealingKeys.get(db);
  if (!key) {
    key = loadSigningKeys(db).then(([first]) => {
      if (!first) throw new Error('no signing key available');
      return Buffer.from(hkdfSync('sha256', first.secret, Buffer.alloc(0), 'mcloud api key secret seal', 32));
    });
    key.catch(() => sealingKeys.delete(db));
    sealingKeys.set(db, key);
  }
  return key;
}

export function sealWith(key: Buffer, secret: string): Buffer {
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

export function openWith(key: Buffer, sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, ivBytes));
  decipher.setAuthTag(sealed.subarray(ivBytes, ivBytes + tagBytes));
  return Buffer.concat([decipher.update(sealed.subarray(ivBytes + tagBytes)), decipher.final()]).toString(
    'utf8',
  );
}

/** Stores the sealed copy of a key's (new) secret; run in the transaction that stores its hash. */
export async function storeSealedApiKeySecret(
  db: Queryable,
  organizationId: string,
  keyId: string,
  secret: string,
): Promise<void> {
  const sealed = sealWith(await sealingKey(db), secret);
  await db.query('UPDATE api_keys SET secret_sealed = $3 WHERE id = $1 AND organization_id = $2', [
    keyId,
    organizationId,
    sealed,
  ]);
}

/** Every API key with a role on the machine (directly, through its location or its organization), opened. */
export async function machineApiKeySecrets(
  db: Queryable,
  scope: { organizationId: string; locationId: string; robotId: string },
): Promise<{ id: string; key: string }[]> {
  const result = await db.query<{ id: string; secret_sealed: Buffer }>(
    `SELECT k.id, k.secret_sealed FROM api_keys k
      WHERE k.organization_id = $1 AND k.secret_sealed IS NOT NULL
        AND EXISTS (SELECT 1 FROM authorizations a
                     WHERE a.organization_id = $1 AND a.identity_type = 'api-key' AND a.identity_id = k.id::text
                       AND ((a.resource_type = 'organization' AND a.resource_id = $1::text)
                         OR (a.resource_type = 'location' AND a.resource_id = $2)
                         OR (a.resource_type = 'robot' AND a.resource_id = $3::text)))
      ORDER BY k.id`,
    [scope.organizationId, scope.locationId, scope.robotId],
  );
  if (result.rows.length === 0) return [];
  const key = await sealingKey(db);
  return result.rows.map((row) => ({ id: row.id, key: openWith(key, row.secret_sealed) }));
}
