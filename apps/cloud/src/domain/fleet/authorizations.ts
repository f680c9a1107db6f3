import { requireRole } from '../auth/permissions.ts';
import type { Principal, ResourceScope, ResourceType, Role } from '../auth/principal.ts';
import { invalidArgument, notFound } from '../errors.ts';
import { requireUuid } from '../validate.ts';
import type { AuthorizationRecord } from './api-keys-repository.ts';
import { type FleetContext, organizationIdsOf } from './fleet-context.ts';
import { findLocation } from './locations-repository.ts';
import { findRobot } from './robots-repository.ts';

/** A role grant as clients send it (`viam.app.v1.Authorization`). */
export interface AuthorizationInput {
  authorizationType: string;
  authorizationId: string;
  resourceType: string;
  resourceId: string;
  organizationId: string;
  identityId?: string;
  identityType?: string;
}

export interface ParsedAuthorization {
  role: Role;
  resourceType: ResourceType;
  resourceId: string;
  organizationId: string;
  scope: ResourceScope;
}

const resourceTypes: readonly ResourceType[] = ['organization', 'location', 'robot'];
const roles: readonly Role[] = ['owner', 'operator'];

/**
 * Validates one grant: `authorization_type` "role", `authorization_id` `<resource_type>_<role>`, a
 * resource that exists in the organization, and a caller who is owner over it (no privilege escalation).
 */
export async function parseGrantableAuthorization(
  ctx: FleetContext,
  principal: Principal,
  input: AuthorizationInput,
  field: string,
): Promise<ParsedAuthorization> {
  if (input.authorizationType !== 'role') {
    throw invalidArgument(`${field}.authorization_type`, 'must be "role"', input.authorizationType);
  }
  const resourceType = input.resourceType as ResourceType;
  if (!resourceTypes.includes(resourceType)) {
    throw invalidArgument(
      `${field}.resource_type`,
      'must be "organization", "location" or "robot"',
      input.resourceType,
    );
  }
  const role = roles.find((r) => input.authorizationId === `${resourceType}_${r}`);
  if (!role) {
    throw invalidArgument(
      `${field}.authorization_id`,
      `must be "${resourceType}_owner" or "${resourceType}_operator"`,
      input.authorizationId,
    );
  }
  const organizationId = requireUuid(`${field}.organization_id`, input.organizationId);
  if (!organizationIdsOf(principal).includes(organizationId)) throw notFound('organization', organizationId);
  let scope: ResourceScope;
  let resourceId: string;
  if (resourceType === 'organization') {
    resourceId = requireUuid(`${field}.resource_id`, input.resourceId);
    if (resourceId !== organizationId) {
      throw invalidArgument(
        `${field}.resource_id`,
        'must equal organization_id for an organization role',
        resourceId,
      );
    }
    scope = { organizationId };
  } else if (resourceType === 'location') {
    resourceId = input.resourceId.trim();
    const location = resourceId === '' ? undefined : await findLocation(ctx.db, resourceId, [organizationId]);
    if (!location) throw notFound('location', resourceId);
    scope = { organizationId, locationId: location.id };
  } else {
    resourceId = requireUuid(`${field}.resource_id`, input.resourceId);
    const robot = await findRobot(ctx.db, resourceId, [organizationId]);
    if (!robot) throw notFound('machine', resourceId);
    scope = { organizationId, locationId: robot.locationId, robotId: robot.id };
  }
  // The caller belongs to the organization (checked above), so only lower resources can be invisible to it.
  if (resourceType === 'organization') requireRole(principal, scope, 'owner');
  else
    requireRole(principal, scope, 'owner', {
      what: resourceType === 'robot' ? 'machine' : resourceType,
      id: resourceId,
    });
  return { role, resourceType, resourceId, organizationId, scope };
}

export function authorizationIdOf(record: { role: Role; resourceType: ResourceType }): string {
  return `${record.resourceType}_${record.role}`;
}

export function toRecord(
  parsed: ParsedAuthorization,
  identityType: 'api-key' | 'user',
  identityId: string,
): AuthorizationRecord {
  return {
    organizationId: parsed.organizationId,
    identityType,
    identityId,
    role: parsed.role,
    resourceType: parsed.resourceType,
    resourceId: parsed.resourceId,
  };
}
