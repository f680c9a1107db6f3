import type { Database } from '../../infra/postgres/database.ts';
import { DomainError, invalidArgument, unauthenticated } from '../errors.ts';
import type { Clock } from '../shared/clock.ts';
import { isUuid } from '../validate.ts';
import { type SigningKey, signAccessToken, verifyAccessToken } from './access-token.ts';
import { findApiKey, findPartWithSecrets, listGrants, loadSigningKeys } from './auth-repository.ts';
import type { Principal } from './principal.ts';
import { secretMatchesHash, secretsEqual } from './secrets.ts';

export interface Credentials {
  type: string;
  entity: string;
  payload: string;
}

export interface Authenticator {
  /** Exchanges credentials for a bearer token (`proto.rpc.v1.AuthService/Authenticate`). */
  authenticate(credentials: Credentials): Promise<string>;
  /** Resolves a bearer token to the current principal; revoked or rotated credentials fail here. */
  principalFromToken(token: string): Promise<Principal>;
  forget(): void;
}

// Principals are re-read from the database this often, bounding how long a revoked key keeps working.
const principalCacheTtlMs = 1_000;
const principalCacheMaxEntries = 10_000;

const invalidCredentials = () => new DomainError('Unauthenticated', 'invalid credentials');

export async function createAuthenticator(db: Database, clock: Clock): Promise<Authenticator> {
  const keys = new Map<string, SigningKey>((await loadSigningKeys(db)).map((key) => [key.id, key]));
  const [signingKey] = keys.values();
  if (!signingKey) throw new Error('no signing key available');
  const cache = new Map<string, { principal: Principal; expiresAtMs: number }>();

  async function authenticate({ type, entity, payload }: Credentials): Promise<string> {
    if (entity === '') throw invalidArgument('entity', 'is required');
    if (payload === '') throw invalidArgument('credentials.payload', 'is required');
    const now = clock.nowMs();
    if (type === 'api-key') {
      if (!isUuid(entity)) throw invalidCredentials();
      const key = await findApiKey(db, entity.toLowerCase());
      if (!key || !secretMatchesHash(payload, key.secretHash)) throw invalidCredentials();
      return signAccessToken(
        { sub: key.id, rpc_creds_type: 'api-key', gen: key.generation },
        signingKey as SigningKey,
        now,
      );
    }
    if (type === 'robot-secret') {
      if (!isUuid(entity)) throw invalidCredentials();
      const part = await findPartWithSecrets(db, entity.toLowerCase());
      const matched = part?.secrets.find((secret) => secretsEqual(payload, secret.secret));
      if (!part || !matched) throw invalidCredentials();
      return signAccessToken(
        { sub: part.partId, rpc_creds_type: 'robot-secret', sid: matched.id },
        signingKey as SigningKey,
        now,
      );
    }
    throw invalidArgument('credentials.type', 'must be "api-key" or "robot-secret"', type);
  }

  async function loadPrincipal(token: string): Promise<Principal> {
    const claims = verifyAccessToken(token, keys);
    if (!claims) throw unauthenticated('invalid or unknown access token');
    if (claims.rpc_creds_type === 'api-key') {
      const key = await findApiKey(db, claims.sub);
      if (!key || key.generation !== claims.gen)
        throw unauthenticated('the API key behind this token was revoked');
      return {
        kind: 'api-key',
        keyId: key.id,
        organizationId: key.organizationId,
        grants: await listGrants(db, 'api-key', key.id),
      };
    }
    const part = await findPartWithSecrets(db, claims.sub);
    if (!part?.secrets.some((secret) => secret.id === claims.sid)) {
      throw unauthenticated('the part secret behind this token was revoked');
    }
    return {
      kind: 'part',
      partId: part.partId,
      robotId: part.robotId,
      locationId: part.locationId,
      organizationId: part.organizationId,
    };
  }

  async function principalFromToken(token: string): Promise<Principal> {
    const now = clock.nowMs();
    const cached = cache.get(token);
    if (cached && cached.expiresAtMs > now) return cached.principal;
    const principal = await loadPrincipal(token);
    if (cache.size >= principalCacheMaxEntries) cache.clear();
    cache.set(token, { principal, expiresAtMs: now + principalCacheTtlMs });
    return principal;
  }

  return { authenticate, principalFromToken, forget: () => cache.clear() };
}
