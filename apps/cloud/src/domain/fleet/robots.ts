import type { DatabaseClient } from '../../infra/postgres/database.ts';
import { withTransaction } from '../../infra/postgres/database.ts';
import { hasRole, requireRole } from '../auth/permissions.ts';
import type { Principal, Role } from '../auth/principal.ts';
import { generateSecret } from '../auth/secrets.ts';
import { DomainError, notFound } from '../errors.ts';
import { newUuid } from '../shared/ids.ts';
import { requireListMax, requireName, requireUuid } from '../validate.ts';
import { type FleetContext, fleetLimits, organizationIdsOf } from './fleet-context.ts';
import { requireLocation, requireLocationId } from './locations.ts';
import { findLocation } from './locations-repository.ts';
import { dnsNameFromPartName, dnsNameWithSuffix } from './machine-addresses.ts';
import { validateMetadata } from './metadata.ts';
import { readMetadata, writeMetadata } from './organizations-repository.ts';
import { insertPart, insertPartSecret, isDnsNameTaken } from './parts-repository.ts';
import {
  deleteRobotRow,
  findRobot,
  insertRobot,
  listRobotsInLocations,
  listRobotsInOrganization,
  type RobotRecord,
  updateRobotRow,
} from './robots-repository.ts';

/**
 * Permissions (machines): reads need operator on the machine (a location or organization role covers
 * it); creating needs owner on the location; renaming, deleting and metadata changes need owner on the
 * machine, and moving it also owner on the target location.
 */

export async function requireRobot(
  ctx: FleetContext,
  principal: Principal,
  robotId: string | undefined,
  role: Role,
  field = 'id',
): Promise<RobotRecord> {
  const id = requireUuid(field, robotId);
  const robot = await findRobot(ctx.db, id, organizationIdsOf(principal));
  if (!robot) throw notFound('machine', id);
  requireRole(
    principal,
    { organizationId: robot.organizationId, locationId: robot.locationId, robotId: id },
    role,
    {
      what: 'machine',
      id,
    },
  );
  return robot;
}

function alreadyExists(what: string, name: string, where: string): DomainError {
  return new DomainError(
    'AlreadyExists',
    `name: a ${what} named ${JSON.stringify(name)} already exists in ${where}`,
  );
}

function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = error as { code?: string; constraint?: string };
  return pgError.code === '23505' && (constraint === undefined || pgError.constraint === constraint);
}

/** A unique DNS label for a new part, derived from its name. */
export async function allocateDnsName(client: DatabaseClient, partName: string): Promise<string> {
  const base = dnsNameFromPartName(partName);
  if (!(await isDnsNameTaken(client, base))) return base;
  for (;;) {
    const candidate = dnsNameWithSuffix(base);
    if (!(await isDnsNameTaken(client, candidate))) return candidate;
  }
}

/** Adds a part (with one enabled secret) to a robot inside the caller's transaction. */
export async function insertPartWithSecret(
  client: DatabaseClient,
  robot: { id: string; organizationId: string; locationId: string },
  name: string,
  mainPart: boolean,
  now: Date,
): Promise<string> {
  const partId = newUuid();
  const dnsName = await allocateDnsName(client, name);
  await insertPart(client, {
    id: partId,
    organizationId: robot.organizationId,
    locationId: robot.locationId,
    robotId: robot.id,
    name,
    dnsName,
    mainPart,
    createdAt: now,
  });
  await insertPartSecret(client, {
    id: newUuid(),
    organizationId: robot.organizationId,
    partId,
    secret: generateSecret(),
    createdAt: now,
  });
  return partId;
}

/** Creates a machine and its main part `<name>-main`. */
export async function newRobot(
  ctx: FleetContext,
  principal: Principal,
  input: { name: string; location: string },
): Promise<string> {
  const name = requireName('name', input.name, fleetLimits.nameMaxChars);
  const location = await requireLocation(ctx, principal, input.location, 'owner', 'location');
  const id = newUuid();
  const now = new Date(ctx.clock.nowMs());
  try {
    await withTransaction(ctx.db, async (client) => {
      await insertRobot(client, {
        id,
        organizationId: location.organizationId,
        locationId: location.id,
        name,
        createdAt: now,
      });
      await insertPartWithSecret(
        client,
        { id, organizationId: location.organizationId, locationId: location.id },
        `${name}-main`,
        true,
        now,
      );
    });
  } catch (error) {
    if (isUniqueViolation(error, 'robots_location_id_name_key'))
      throw alreadyExists('machine', name, `location ${location.id}`);
    throw error;
  }
  return id;
}

export async function getRobot(ctx: FleetContext, principal: Principal, id: string): Promise<RobotRecord> {
  return requireRobot(ctx, principal, id, 'operator');
}

export async function updateRobot(
  ctx: FleetContext,
  principal: Principal,
  input: { id: string; name: string; location: string },
): Promise<RobotRecord> {
  const robot = await requireRobot(ctx, principal, input.id, 'owner');
  const name = requireName('name', input.name, fleetLimits.nameMaxChars);
  let locationId = robot.locationId;
  if (input.location !== '' && input.location !== robot.locationId) {
    const target = await requireLocation(ctx, principal, input.location, 'owner', 'location');
    if (target.organizationId !== robot.organizationId) throw notFound('location', target.id);
    locationId = target.id;
  }
  try {
    await withTransaction(ctx.db, (client) =>
      updateRobotRow(client, robot.organizationId, robot.id, { name, locationId }),
    );
  } catch (error) {
    if (isUniqueViolation(error, 'robots_location_id_name_key'))
      throw alreadyExists('machine', name, `location ${locationId}`);
    throw error;
  }
  ctx.forgetCredentials();
  return requireRobot(ctx, principal, robot.id, 'operator');
}

export async function deleteRobot(ctx: FleetContext, principal: Principal, id: string): Promise<void> {
  const robot = await requireRobot(ctx, principal, id, 'owner');
  await withTransaction(ctx.db, (client) => deleteRobotRow(client, robot.organizationId, robot.id));
  ctx.forgetCredentials();
}

function visible(principal: Principal, robots: RobotRecord[]): RobotRecord[] {
  return robots.filter((robot) =>
    hasRole(
      principal,
      { organizationId: robot.organizationId, locationId: robot.locationId, robotId: robot.id },
      'operator',
    ),
  );
}

export async function listRobots(
  ctx: FleetContext,
  principal: Principal,
  locationId: string,
): Promise<RobotRecord[]> {
  return listRobotsForLocations(ctx, principal, [locationId], 'location_id');
}

export async function listRobotsForLocations(
  ctx: FleetContext,
  principal: Principal,
  locationIds: readonly string[],
  field = 'location_ids',
): Promise<RobotRecord[]> {
  requireListMax(field, locationIds, fleetLimits.listIdsMax);
  const robots: RobotRecord[] = [];
  for (const [index, locationId] of locationIds.entries()) {
    const id = requireLocationId(field === 'location_ids' ? `location_ids[${index}]` : field, locationId);
    const location = await findLocation(ctx.db, id, organizationIdsOf(principal));
    // A caller with no role anywhere near a location must not learn it exists.
    if (!location || !hasAnyRoleAround(principal, location.organizationId, location.id))
      throw notFound('location', id);
    robots.push(
      ...visible(principal, await listRobotsInLocations(ctx.db, location.organizationId, [location.id])),
    );
  }
  return robots;
}

function hasAnyRoleAround(principal: Principal, organizationId: string, locationId: string): boolean {
  if (principal.kind === 'part') return principal.locationId === locationId;
  return principal.grants.some(
    (grant) =>
      grant.organizationId === organizationId &&
      (grant.resourceType !== 'location' || grant.resourceId === locationId),
  );
}

export async function listRobotsForOrg(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
): Promise<RobotRecord[]> {
  const id = requireUuid('org_id', organizationId);
  if (!organizationIdsOf(principal).includes(id)) throw notFound('organization', id);
  return visible(principal, await listRobotsInOrganization(ctx.db, id));
}

export async function getRobotMetadata(ctx: FleetContext, principal: Principal, id: string) {
  const robot = await requireRobot(ctx, principal, id, 'operator');
  return readMetadata(ctx.db, 'robots', robot.organizationId, robot.id);
}

export async function updateRobotMetadata(
  ctx: FleetContext,
  principal: Principal,
  id: string,
  data: Record<string, unknown> | undefined,
) {
  const robot = await requireRobot(ctx, principal, id, 'owner');
  await writeMetadata(ctx.db, 'robots', robot.organizationId, robot.id, validateMetadata('data', data));
}
