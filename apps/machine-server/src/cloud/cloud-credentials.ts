/**
 * The `cloud` section's authentication (machine-runtime.md A1.1, wire-protocol.md §1.5):
 * an API key if fully set (`api-key`, entity = key id), else the part secret (`robot-secret`,
 * entity = part id).
 */
import { invalidConfig } from '../errors.ts';

export interface CloudCredentials {
  /** The machine part ID (`cloud.id`). */
  readonly partId: string;
  readonly secret?: string;
  readonly apiKey?: { readonly id: string; readonly key: string };
}

export interface AuthenticateRequestFields {
  entity: string;
  type: 'api-key' | 'robot-secret';
  payload: string;
}

/** What `proto.rpc.v1.AuthService/Authenticate` is called with; throws when no credential is set. */
export function authenticateFields(credentials: CloudCredentials): AuthenticateRequestFields {
  if (credentials.apiKey && credentials.apiKey.id !== '' && credentials.apiKey.key !== '') {
    return { entity: credentials.apiKey.id, type: 'api-key', payload: credentials.apiKey.key };
  }
  if (credentials.secret)
    return { entity: credentials.partId, type: 'robot-secret', payload: credentials.secret };
  throw invalidConfig('cloud', 'needs "secret" or a complete "api_key" {id, key}');
}
