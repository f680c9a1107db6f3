import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random secret for API keys, part secrets and location secrets (256 bits, URL-safe). */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Secrets are long random strings, so a single SHA-256 is a sufficient one-way hash (no password
 * stretching needed); it lets us store API keys without being able to show them again.
 */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Compares secrets in time independent of where they differ. */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(hashSecret(given), hashSecret(expected));
}

export function secretMatchesHash(given: string, expectedHash: Uint8Array): boolean {
  const actual = hashSecret(given);
  return actual.length === expectedHash.length && timingSafeEqual(actual, expectedHash);
}
