import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/** Claims of the bearer tokens this cloud issues (goutils-compatible names). */
export interface AccessTokenClaims {
  sub: string;
  aud: string;
  iat: number;
  jti: string;
  rpc_creds_type: 'api-key' | 'robot-secret';
  /** API keys: the key's generation; rotating the key makes older tokens invalid. */
  gen?: number;
  /** Part secrets: which secret was used; deleting it makes the token invalid. */
  sid?: string;
}

export interface SigningKey {
  id: string;
  secret: Uint8Array;
}

export const tokenAudience = 'machine-cloud';

/**
 * HS256 JWTs without `exp`: the TypeScript SDK never refreshes its token, so tokens live as long as the
 * credential that issued them; revocation works through `gen`/`sid`, checked on every call.
 */
export function signAccessToken(
  claims: Omit<AccessTokenClaims, 'jti' | 'iat' | 'aud'>,
  key: SigningKey,
  nowMs: number,
) {
  const header = { alg: 'HS256', typ: 'JWT', kid: key.id };
  const body: AccessTokenClaims = {
    ...claims,
    aud: tokenAudience,
    iat: Math.floor(nowMs / 1000),
    jti: randomUUID(),
  };
  const unsigned = `${base64UrlJson(header)}.${base64UrlJson(body)}`;
  return `${unsigned}.${sign(unsigned, key.secret)}`;
}

/** Returns the claims of a well-formed token signed by one of `keys`, otherwise undefined. */
export function verifyAccessToken(
  token: string,
  keys: ReadonlyMap<string, SigningKey>,
): AccessTokenClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [headerPart, bodyPart, signature] = parts as [string, string, string];
  const header = parseJson(headerPart) as { alg?: string; kid?: string } | undefined;
  if (header?.alg !== 'HS256' || typeof header.kid !== 'string') return undefined;
  const key = keys.get(header.kid);
  if (!key) return undefined;
  const expected = Buffer.from(sign(`${headerPart}.${bodyPart}`, key.secret));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  const claims = parseJson(bodyPart) as AccessTokenClaims | undefined;
  if (!claims || claims.aud !== tokenAudience || typeof claims.sub !== 'string' || claims.sub === '')
    return undefined;
  return claims;
}

function sign(data: string, secret: Uint8Array): string {
  return createHmac('sha256', secret).update(data).digest('base64url');
}

function base64UrlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function parseJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}
