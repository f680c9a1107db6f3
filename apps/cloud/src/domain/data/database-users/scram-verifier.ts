import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:
 * <ServerKey>`, RFC 5802/7677). Sending the verifier instead of the password keeps the plain password out
 * of the database's statement log and out of any SQL text. Passwords are printable ASCII (see
 * database-users.ts), for which PostgreSQL's SASLprep normalization changes nothing.
 */
export function scramSha256Verifier(password: string, iterations = 4096): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
