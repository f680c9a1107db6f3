import { createHmac, timingSafeEqual } from 'node:crypto';

/** A compact JWT signed with HMAC-SHA256: `base64url(header).base64url(claims).signature`. */
export function signHs256Token(header: Record<string, unknown>, claims: object, secret: Uint8Array): string {
  const unsigned = `${base64UrlJson({ ...header, alg: 'HS256', typ: 'JWT' })}.${base64UrlJson(claims)}`;
  return `${unsigned}.${sign(unsigned, secret)}`;
}

/**
 * The claims of a well-formed HS256 token whose signature matches the secret `secretFor` picks from
 * its header (e.g. by `kid`); undefined otherwise. The signature is compared in constant time; the
 * caller validates the claims.
 */
export function verifyHs256Token(
  token: string,
  secretFor: (header: Record<string, unknown>) => Uint8Array | undefined,
): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [headerPart, bodyPart, signature] = parts as [string, string, string];
  const header = parseJson(headerPart);
  if (header?.alg !== 'HS256') return undefined;
  const secret = secretFor(header);
  if (!secret) return undefined;
  const expected = Buffer.from(sign(`${headerPart}.${bodyPart}`, secret));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  return parseJson(bodyPart);
}

function sign(data: string, secret: Uint8Array): string {
  return createHmac('sha256', secret).update(data).digest('base64url');
}

function base64UrlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function parseJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
