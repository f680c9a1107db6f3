import { randomBytes, randomInt, randomUUID } from 'node:crypto';

/** ID shapes follow what clients have seen from the reference service (wire-protocol §2.1). */

export function newUuid(): string {
  return randomUUID();
}

const lowerAlphanumeric = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Location IDs: 10 lowercase alphanumerics, e.g. `x5vur1fmps`. */
export function newLocationId(): string {
  let id = '';
  for (let i = 0; i < 10; i++) id += lowerAlphanumeric[randomInt(lowerAlphanumeric.length)];
  return id;
}

/** ObjectId-like 24-hex IDs (datasets, binary files, bounding boxes): seconds since epoch + randomness. */
export function newObjectId(nowMs = Date.now()): string {
  const seconds = Math.floor(nowMs / 1000)
    .toString(16)
    .padStart(8, '0');
  return seconds + randomBytes(8).toString('hex');
}
