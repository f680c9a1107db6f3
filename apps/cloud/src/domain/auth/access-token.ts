import { randomUUID } from 'node:crypto';
import { signHs256Token, verifyHs256Token } from '@mcloud/rpc-server';

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
  const body: AccessTokenClaims = {
    ...claims,
    aud: tokenAudience,
    iat: Math.floor(nowMs / 1000),
    jti: randomUUID(),
  };
  return signHs256Token({ kid: key.id }, body, key.secret);
}

/** Returns the claims of a well-formed token signed by one of `keys`, otherwise undefined. */
export function verifyAccessToken(
  token: string,
  keys: ReadonlyMap<string, SigningKey>,
): AccessTokenClaims | undefined {
  const claims = verifyHs256Token(token, (header) =>
    typeof header.kid === 'string' ? keys.get(header.kid)?.secret : undefined,
  ) as AccessTokenClaims | undefined;
  if (!claims || claims.aud !== tokenAudience || typeof claims.sub !== 'string' || claims.sub === '')
    return undefined;
  return claims;
}
