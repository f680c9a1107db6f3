import type { Database } from '../../infra/postgres/database.ts';
import type { Principal } from '../auth/principal.ts';
import type { Clock } from '../shared/clock.ts';

/** What the fleet domain needs from the composition root. */
export interface FleetContext {
  db: Database;
  clock: Clock;
  /** Silence after which a part counts as offline. */
  partOfflineAfterMs: number;
  /** Drops cached principals so revoked or rotated credentials stop working at once. */
  forgetCredentials(): void;
}

/**
 * Organizations the principal has any standing in. Every lookup by ID is restricted to these, so an ID
 * from another organization behaves exactly like an unknown one.
 */
export function organizationIdsOf(principal: Principal): string[] {
  if (principal.kind === 'part') return [principal.organizationId];
  return [...new Set(principal.grants.map((grant) => grant.organizationId))];
}

/** Hard limits on user input, named in error messages. */
export const fleetLimits = {
  nameMaxChars: 200,
  metadataMaxBytes: 64 * 1024,
  configMaxBytes: 4 * 1024 * 1024,
  enabledSecretsMax: 2,
  authorizationsPerKeyMax: 100,
  listIdsMax: 1000,
  emailMaxChars: 320,
} as const;
