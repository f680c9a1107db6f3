import type { Principal } from '../../src/domain/auth/principal.ts';

/** An organization owner (an API key with the owner role on it), for calling use cases directly. */
export function ownerOf(organizationId: string): Principal {
  return {
    kind: 'api-key',
    keyId: `owner-${organizationId}`,
    organizationId,
    grants: [{ role: 'owner', resourceType: 'organization', resourceId: organizationId, organizationId }],
  };
}
