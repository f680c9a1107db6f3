import type { Principal } from '../../auth/principal.ts';
import { permissionDenied } from '../../errors.ts';
import type { SqlParams } from './sql-params.ts';

/**
 * What data a caller reaches. API keys: the union of their grants (whole organizations, locations,
 * machines). Machine credentials: only their own part's data.
 */
export type DataScope =
  | {
      kind: 'grants';
      /** Every organization the caller holds any grant in. */
      reachableOrganizationIds: readonly string[];
      wholeOrganizationIds: readonly string[];
      locationIds: readonly string[];
      robotIds: readonly string[];
    }
  | { kind: 'part'; organizationId: string; partId: string };

export function dataScopeOf(principal: Principal): DataScope {
  if (principal.kind === 'part') {
    return { kind: 'part', organizationId: principal.organizationId, partId: principal.partId };
  }
  const pick = (type: string) => [
    ...new Set(
      principal.grants.filter((grant) => grant.resourceType === type).map((grant) => grant.resourceId),
    ),
  ];
  return {
    kind: 'grants',
    reachableOrganizationIds: [...new Set(principal.grants.map((grant) => grant.organizationId))],
    wholeOrganizationIds: pick('organization'),
    locationIds: pick('location'),
    robotIds: pick('robot'),
  };
}

export function reachableOrganizations(scope: DataScope): readonly string[] {
  return scope.kind === 'part' ? [scope.organizationId] : scope.reachableOrganizationIds;
}

/**
 * The organizations a query runs over: the requested ones (each must be reachable — an organization the
 * caller cannot reach, known or not, is refused alike) or, when none are requested, all reachable ones.
 */
export function effectiveOrganizations(
  scope: DataScope,
  requested: readonly string[],
  field: string,
): readonly string[] {
  const reachable = reachableOrganizations(scope);
  if (requested.length === 0) return reachable;
  for (const id of requested) {
    if (!reachable.includes(id)) {
      throw permissionDenied(`${field}: this credential has no access to organization ${JSON.stringify(id)}`);
    }
  }
  return requested;
}

/** True when every one of `organizationIds` is covered whole (no narrower location/machine condition needed). */
export function coversWholeOrganizations(scope: DataScope, organizationIds: readonly string[]): boolean {
  return scope.kind === 'grants' && organizationIds.every((id) => scope.wholeOrganizationIds.includes(id));
}

/**
 * SQL conditions restricting rows of `alias` (a table with organization_id, location_id, robot_id and
 * part_id columns) to the caller's scope within `organizationIds`.
 */
export function scopeConditions(
  scope: DataScope,
  organizationIds: readonly string[],
  alias: string,
  params: SqlParams,
): string[] {
  const conditions = [`${alias}.organization_id = ANY(${params.add(organizationIds)}::uuid[])`];
  if (scope.kind === 'part') {
    conditions.push(`${alias}.part_id = ${params.add(scope.partId)}::uuid`);
    return conditions;
  }
  if (coversWholeOrganizations(scope, organizationIds)) return conditions;
  const arms: string[] = [];
  const whole = scope.wholeOrganizationIds.filter((id) => organizationIds.includes(id));
  if (whole.length) arms.push(`${alias}.organization_id = ANY(${params.add(whole)}::uuid[])`);
  if (scope.locationIds.length)
    arms.push(`${alias}.location_id = ANY(${params.add(scope.locationIds)}::text[])`);
  if (scope.robotIds.length) arms.push(`${alias}.robot_id = ANY(${params.add(scope.robotIds)}::uuid[])`);
  conditions.push(arms.length ? arms.join(' OR ') : 'false');
  return conditions;
}

/** Whether a row in this place is inside the scope (for single-item checks in code). */
export function scopeCovers(
  scope: DataScope,
  place: { organizationId: string; locationId: string; robotId: string; partId: string },
): boolean {
  if (scope.kind === 'part')
    return place.organizationId === scope.organizationId && place.partId === scope.partId;
  if (!scope.reachableOrganizationIds.includes(place.organizationId)) return false;
  return (
    scope.wholeOrganizationIds.includes(place.organizationId) ||
    scope.locationIds.includes(place.locationId) ||
    scope.robotIds.includes(place.robotId)
  );
}
