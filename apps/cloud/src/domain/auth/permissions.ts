import { DomainError, notFound, permissionDenied } from '../errors.ts';
import type { Grant, Principal, ResourceScope, Role } from './principal.ts';

function grantCovers(grant: Grant, scope: ResourceScope, role: Role): boolean {
  if (grant.organizationId !== scope.organizationId) return false;
  if (role === 'owner' && grant.role !== 'owner') return false; // owner ⊇ operator
  switch (grant.resourceType) {
    case 'organization':
      return grant.resourceId === scope.organizationId;
    case 'location':
      return grant.resourceId === scope.locationId;
    case 'robot':
      return grant.resourceId === scope.robotId;
  }
}

export function hasRole(principal: Principal, scope: ResourceScope, role: Role): boolean {
  if (principal.kind === 'part') {
    // Machine credentials reach only their own part, and never as owner.
    return role === 'operator' && scope.partId === principal.partId;
  }
  return principal.grants.some((grant) => grantCovers(grant, scope, role));
}

/** True when the principal holds any role somewhere inside the organization. */
export function belongsToOrganization(principal: Principal, organizationId: string): boolean {
  if (principal.kind === 'part') return principal.organizationId === organizationId;
  return principal.grants.some((grant) => grant.organizationId === organizationId);
}

/**
 * Throws unless the principal holds `role` on the scope. A caller with no standing in the scope's
 * organization gets the same NotFound a missing resource gets, so IDs of other organizations leak nothing.
 */
export function requireRole(
  principal: Principal,
  scope: ResourceScope,
  role: Role,
  resource?: { what: string; id: string },
): void {
  if (hasRole(principal, scope, role)) return;
  if (resource && !canSeeScope(principal, scope)) throw notFound(resource.what, resource.id);
  throw permissionDenied(`this credential lacks the ${role} role needed here`);
}

/** Whether the principal can learn that something in this scope exists (any role on it or above). */
export function canSeeScope(principal: Principal, scope: ResourceScope): boolean {
  return hasRole(principal, scope, 'operator');
}

/** Organization-level checks: an organization ID the caller does not belong to is simply denied. */
export function requireOrganizationRole(principal: Principal, organizationId: string, role: Role): void {
  if (!hasRole(principal, { organizationId }, role)) {
    throw new DomainError(
      'PermissionDenied',
      `this credential lacks the organization ${role} role for organization ${JSON.stringify(organizationId)}`,
    );
  }
}
