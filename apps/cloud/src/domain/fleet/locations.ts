import { withTransaction } from '../../infra/postgres/database.ts';
import { hasRole, requireRole } from '../auth/permissions.ts';
import type { Principal, Role } from '../auth/principal.ts';
import { generateSecret } from '../auth/secrets.ts';
import { failedPrecondition, invalidArgument, notFound } from '../errors.ts';
import { newLocationId, newUuid } from '../shared/ids.ts';
import { requireMaxLength, requireName, requireNonEmpty, requireUuid } from '../validate.ts';
import { type FleetContext, fleetLimits, organizationIdsOf } from './fleet-context.ts';
import {
  countChildLocations,
  deleteLocationRow,
  deleteLocationSecretRow,
  findLocation,
  insertLocation,
  insertLocationSecret,
  isSelfOrAncestor,
  type LocationRecord,
  listLocations as listLocationRows,
  updateLocation as updateLocationRow,
} from './locations-repository.ts';
import { validateMetadata } from './metadata.ts';
import { requireOrganizationAccess } from './organizations.ts';
import { readMetadata, writeMetadata } from './organizations-repository.ts';

/**
 * Permissions (locations): reads need operator on the location (or above); creating and deleting a
 * location need organization owner; changing one (name, parent, region, secrets, metadata) needs owner
 * on the location.
 */

const locationIdPattern = /^[a-z0-9]{1,64}$/;

export function requireLocationId(field: string, value: string | undefined): string {
  const id = requireNonEmpty(field, value).trim();
  if (!locationIdPattern.test(id))
    throw invalidArgument(field, 'must be a location ID (lowercase letters and digits)', id);
  return id;
}

/** Loads a location the caller holds `role` on; unknown and foreign IDs answer NotFound. */
export async function requireLocation(
  ctx: FleetContext,
  principal: Principal,
  locationId: string | undefined,
  role: Role,
  field = 'location_id',
): Promise<LocationRecord> {
  const id = requireLocationId(field, locationId);
  const location = await findLocation(ctx.db, id, organizationIdsOf(principal));
  if (!location) throw notFound('location', id);
  requireRole(principal, { organizationId: location.organizationId, locationId: id }, role, {
    what: 'location',
    id,
  });
  return location;
}

async function reload(ctx: FleetContext, location: LocationRecord): Promise<LocationRecord> {
  const fresh = await findLocation(ctx.db, location.id, [location.organizationId]);
  if (!fresh) throw notFound('location', location.id);
  return fresh;
}

export async function createLocation(
  ctx: FleetContext,
  principal: Principal,
  input: { organizationId: string; name: string; parentLocationId?: string | undefined },
): Promise<LocationRecord> {
  const organizationId = requireOrganizationAccess(principal, input.organizationId, 'owner');
  const name = requireName('name', input.name, fleetLimits.nameMaxChars);
  let parentLocationId: string | null = null;
  if (input.parentLocationId !== undefined && input.parentLocationId !== '') {
    const parent = await requireLocation(
      ctx,
      principal,
      input.parentLocationId,
      'owner',
      'parent_location_id',
    );
    if (parent.organizationId !== organizationId) throw notFound('location', parent.id);
    parentLocationId = parent.id;
  }
  const id = newLocationId();
  const now = new Date(ctx.clock.nowMs());
  await withTransaction(ctx.db, async (client) => {
    await insertLocation(client, { id, organizationId, name, parentLocationId, createdAt: now });
    await insertLocationSecret(client, {
      id: newUuid(),
      organizationId,
      locationId: id,
      secret: generateSecret(),
      createdAt: now,
    });
  });
  return reload(ctx, { id, organizationId } as LocationRecord);
}

export async function getLocation(
  ctx: FleetContext,
  principal: Principal,
  locationId: string,
): Promise<LocationRecord> {
  return requireLocation(ctx, principal, locationId, 'operator');
}

export async function updateLocation(
  ctx: FleetContext,
  principal: Principal,
  input: {
    locationId: string;
    name?: string | undefined;
    parentLocationId?: string | undefined;
    region?: string | undefined;
  },
): Promise<LocationRecord> {
  const location = await requireLocation(ctx, principal, input.locationId, 'owner');
  const name =
    input.name === undefined ? undefined : requireName('name', input.name, fleetLimits.nameMaxChars);
  const region = input.region === undefined ? undefined : requireMaxLength('region', input.region.trim(), 64);
  let parentLocationId: string | null | undefined;
  if (input.parentLocationId !== undefined) {
    if (input.parentLocationId === '') parentLocationId = null;
    else {
      const parent = await requireLocation(
        ctx,
        principal,
        input.parentLocationId,
        'owner',
        'parent_location_id',
      );
      if (parent.organizationId !== location.organizationId) throw notFound('location', parent.id);
      if (await isSelfOrAncestor(ctx.db, location.organizationId, parent.id, location.id)) {
        throw invalidArgument('parent_location_id', 'would create a cycle of locations', parent.id);
      }
      parentLocationId = parent.id;
    }
  }
  await updateLocationRow(ctx.db, location.organizationId, location.id, {
    ...(name !== undefined && { name }),
    ...(parentLocationId !== undefined && { parentLocationId }),
    ...(region !== undefined && { region }),
  });
  return reload(ctx, location);
}

export async function deleteLocation(
  ctx: FleetContext,
  principal: Principal,
  locationId: string,
): Promise<void> {
  const location = await requireLocation(ctx, principal, locationId, 'operator');
  requireOrganizationAccess(principal, location.organizationId, 'owner');
  await withTransaction(ctx.db, async (client) => {
    await client.query('SELECT 1 FROM locations WHERE id = $1 AND organization_id = $2 FOR UPDATE', [
      location.id,
      location.organizationId,
    ]);
    const robots = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM robots WHERE location_id = $1 AND organization_id = $2',
      [location.id, location.organizationId],
    );
    const robotCount = robots.rows[0]?.n ?? 0;
    if (robotCount > 0) {
      throw failedPrecondition(
        `location ${JSON.stringify(location.id)} still has ${robotCount} machine(s); move or delete them first`,
      );
    }
    const children = await countChildLocations(client, location.organizationId, location.id);
    if (children > 0) {
      throw failedPrecondition(
        `location ${JSON.stringify(location.id)} still has ${children} child location(s)`,
      );
    }
    await deleteLocationRow(client, location.organizationId, location.id);
  });
  ctx.forgetCredentials();
}

/** Locations of the organization the caller can see (all of them for an organization role). */
export async function listLocations(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
): Promise<LocationRecord[]> {
  const id = requireUuid('organization_id', organizationId);
  if (!organizationIdsOf(principal).includes(id)) throw notFound('organization', id);
  const all = await listLocationRows(ctx.db, id);
  return all.filter((location) =>
    hasRole(principal, { organizationId: id, locationId: location.id }, 'operator'),
  );
}

export async function locationAuth(
  ctx: FleetContext,
  principal: Principal,
  locationId: string,
): Promise<LocationRecord> {
  return requireLocation(ctx, principal, locationId, 'owner');
}

export async function createLocationSecret(
  ctx: FleetContext,
  principal: Principal,
  locationId: string,
): Promise<LocationRecord> {
  const location = await requireLocation(ctx, principal, locationId, 'owner');
  await withTransaction(ctx.db, async (client) => {
    await client.query('SELECT 1 FROM locations WHERE id = $1 AND organization_id = $2 FOR UPDATE', [
      location.id,
      location.organizationId,
    ]);
    const enabled = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM location_secrets WHERE location_id = $1 AND organization_id = $2 AND state = 1',
      [location.id, location.organizationId],
    );
    if ((enabled.rows[0]?.n ?? 0) >= fleetLimits.enabledSecretsMax) {
      throw failedPrecondition(
        `location ${JSON.stringify(location.id)} already has ${fleetLimits.enabledSecretsMax} enabled secrets (the maximum); delete one first`,
      );
    }
    await insertLocationSecret(client, {
      id: newUuid(),
      organizationId: location.organizationId,
      locationId: location.id,
      secret: generateSecret(),
      createdAt: new Date(ctx.clock.nowMs()),
    });
  });
  return reload(ctx, location);
}

export async function deleteLocationSecret(
  ctx: FleetContext,
  principal: Principal,
  input: { locationId: string; secretId: string },
): Promise<void> {
  const location = await requireLocation(ctx, principal, input.locationId, 'owner');
  const secretId = requireUuid('secret_id', input.secretId);
  if (!location.secrets.some((secret) => secret.id === secretId)) throw notFound('location secret', secretId);
  if (location.secrets.length <= 1) {
    throw failedPrecondition(
      `location ${JSON.stringify(location.id)} must keep at least one secret; create another first`,
    );
  }
  if (!(await deleteLocationSecretRow(ctx.db, location.organizationId, location.id, secretId))) {
    throw notFound('location secret', secretId);
  }
}

export async function getLocationMetadata(ctx: FleetContext, principal: Principal, locationId: string) {
  const location = await requireLocation(ctx, principal, locationId, 'operator');
  return readMetadata(ctx.db, 'locations', location.organizationId, location.id);
}

export async function updateLocationMetadata(
  ctx: FleetContext,
  principal: Principal,
  locationId: string,
  data: Record<string, unknown> | undefined,
): Promise<void> {
  const location = await requireLocation(ctx, principal, locationId, 'owner');
  await writeMetadata(
    ctx.db,
    'locations',
    location.organizationId,
    location.id,
    validateMetadata('data', data),
  );
}
