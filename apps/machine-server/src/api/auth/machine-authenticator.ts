import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { signHs256Token, verifyHs256Token } from '@mcloud/rpc-server';
import { MachineError } from '../../errors.ts';
import { apiKeyCredential, locationSecretCredential, type MachineAuthConfig } from './machine-auth-config.ts';

/** Who made a call: the entity of the credential its token was issued for. */
export interface MachinePrincipal {
  readonly entity: string;
  readonly credentialType: string;
}

export interface MachineAuthenticator {
  /** `proto.rpc.v1.AuthService/Authenticate`: checks a credential and issues a bearer token. */
  authenticate(entity: string, type: string, payload: string): string;
  /** Checks a bearer token against the credentials configured right now. */
  verify(token: string): MachinePrincipal;
}

interface TokenClaims {
  sub: string;
  aud: string;
  iat: number;
  jti: string;
  rpc_creds_type: string;
  /** HMAC of the credential the token was issued for: removing or changing it revokes the token. */
  cfp: string;
}

const audience = 'machine-server';
const maxFieldLength = 4096;

/**
 * HS256 tokens signed with a key that lives as long as the process (so a web-server restart after a
 * config change keeps sessions), without `exp` because the TypeScript SDK never refreshes its token;
 * every call re-checks that the credential behind the token is still configured.
 */
export function createMachineAuthenticator(currentConfig: () => MachineAuthConfig): MachineAuthenticator {
  const signingKey = randomBytes(32);
  const fingerprint = (type: string, payload: string) =>
    createHmac('sha256', signingKey).update(`${type}\0${payload}`).digest('base64url');

  function credentialFingerprint(config: MachineAuthConfig, entity: string, type: string, payload: string) {
    if (type === apiKeyCredential) {
      const key = config.apiKeys.get(entity);
      // Compare even for an unknown key id so timing does not tell which ids exist.
      const matches = secretsEqual(payload, key ?? '') && key !== undefined;
      return matches ? fingerprint(type, payload) : undefined;
    }
    if (type === locationSecretCredential) {
      let matches = false;
      for (const secret of config.locationSecrets) matches = secretsEqual(payload, secret) || matches;
      return matches && config.hostNames.has(entity) ? fingerprint(type, payload) : undefined;
    }
    return undefined;
  }

  return {
    authenticate(entity, type, payload) {
      checkLength('entity', entity);
      checkLength('credentials.payload', payload);
      const config = currentConfig();
      if (!config.required) {
        throw new MachineError('Unimplemented', 'authentication is not configured on this machine');
      }
      if (type !== apiKeyCredential && type !== locationSecretCredential) {
        throw new MachineError(
          'InvalidArgument',
          `credentials.type ${JSON.stringify(type)} is not accepted (use "${apiKeyCredential}" or "${locationSecretCredential}")`,
        );
      }
      const cfp = credentialFingerprint(config, entity, type, payload);
      if (!cfp) throw new MachineError('Unauthenticated', 'invalid credentials');
      const claims: TokenClaims = {
        sub: entity,
        aud: audience,
        iat: Math.floor(Date.now() / 1000),
        jti: randomUUID(),
        rpc_creds_type: type,
        cfp,
      };
      return signHs256Token({}, claims, signingKey);
    },

    verify(token) {
      const claims = verifySignature(token, signingKey);
      if (!claims) throw new MachineError('Unauthenticated', 'invalid or expired access token');
      const config = currentConfig();
      const valid =
        claims.rpc_creds_type === apiKeyCredential
          ? apiKeyStillValid(config, claims, fingerprint)
          : locationSecretStillValid(config, claims, fingerprint);
      if (!valid)
        throw new MachineError('Unauthenticated', 'the credential of this access token was revoked');
      return { entity: claims.sub, credentialType: claims.rpc_creds_type };
    },
  };
}

function apiKeyStillValid(
  config: MachineAuthConfig,
  claims: TokenClaims,
  fingerprint: (type: string, payload: string) => string,
): boolean {
  const key = config.apiKeys.get(claims.sub);
  return key !== undefined && stringsEqual(fingerprint(apiKeyCredential, key), claims.cfp);
}

function locationSecretStillValid(
  config: MachineAuthConfig,
  claims: TokenClaims,
  fingerprint: (type: string, payload: string) => string,
): boolean {
  if (claims.rpc_creds_type !== locationSecretCredential || !config.hostNames.has(claims.sub)) return false;
  let valid = false;
  for (const secret of config.locationSecrets) {
    valid = stringsEqual(fingerprint(locationSecretCredential, secret), claims.cfp) || valid;
  }
  return valid;
}

function checkLength(field: string, value: string): void {
  if (value.length > maxFieldLength) {
    throw new MachineError(
      'InvalidArgument',
      `${field} is ${value.length} characters; the limit is ${maxFieldLength}`,
    );
  }
}

/** Constant-time comparison of secrets of any length (hashed first, so lengths do not leak). */
function secretsEqual(given: string, expected: string): boolean {
  const hash = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(hash(given), hash(expected));
}

function stringsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function verifySignature(token: string, key: Uint8Array): TokenClaims | undefined {
  const claims = verifyHs256Token(token, () => key) as Partial<TokenClaims> | undefined;
  if (
    !claims ||
    claims.aud !== audience ||
    typeof claims.sub !== 'string' ||
    typeof claims.cfp !== 'string' ||
    typeof claims.rpc_creds_type !== 'string'
  ) {
    return undefined;
  }
  return claims as TokenClaims;
}
