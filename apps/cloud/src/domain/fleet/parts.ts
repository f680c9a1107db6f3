import { withTransaction } from '../../infra/postgres/database.ts';
import { hasRole, requireRole } from '../auth/permissions.ts';
import type { Principal, Role } from '../auth/principal.ts';
import { generateSecret } from '../auth/secrets.ts';
import { DomainError, failedPrecondition, notFound } from '../errors.ts';
import { notifyMachine } from '../machines/machine-notifications.ts';
import { newUuid } from '../shared/ids.ts';
import { requireName, requireUuid } from '../validate.ts';
import { type FleetContext, fleetLimits, organizationIdsOf } from './fleet-context.ts';
import { requireLocation } from './locations.ts';
import { validateMetadata } from './metadata.ts';
import { readMetadata, writeMetadata } from './organizations-repository.ts';
import { requireFreshEdit, validatePartConfig } from './part-config.ts';
import {
  deletePartRow,
  deletePartSecretRow,
  type EditorType,
  findPart,
  findPartsByNameInLocation,
  insertPartHistory,
  insertPartSecret,
  listPartHistory,
  listPartsOfRobot,
  type PartHistoryRecord,
  type PartRecord,
  setMainPart,
  setNeedsRestart,
  updatePartConfig,
} from './parts-repository.ts';
import { insertPartWithSecret, requireRobot } from './robots.ts';

/**
 * Permissions (parts): reads (parts, history, metadata) need operator on the machine — a part's own
 * credentials read only that part; restart requests need operator; adding, renaming, configuring,
 * deleting parts, choosing the main part, secrets and metadata changes need owner on the machine.
 */

const historyLimit = 100;

export async function requirePart(
  ctx: FleetContext,
  principal: Principal,
  partId: string | undefined,
  role: Role,
  field = 'id',
): Promise<PartRecord> {
  const id = requireUuid(field, partId);
  const part = await findPart(ctx.db, id, organizationIdsOf(principal));
  if (!part) throw notFound('machine part', id);
  requireRole(
    principal,
    {
      organizationId: part.organizationId,
      locationId: part.locationId,
      robotId: part.robotId,
      partId: part.id,
    },
    role,
    { what: 'machine part', id },
  );
  return part;
}

async function reload(ctx: FleetContext, part: { id: string; organizationId: string }): Promise<PartRecord> {
  const fresh = await findPart(ctx.db, part.id, [part.organizationId]);
  if (!fresh) throw notFound('machine part', part.id);
  return fresh;
}

export async function newRobotPart(
  ctx: FleetContext,
  principal: Principal,
  input: { robotId: string; partName: string },
): Promise<string> {
  const robot = await requireRobot(ctx, principal, input.robotId, 'owner', 'robot_id');
  const name = requireName('part_name', input.partName, fleetLimits.nameMaxChars);
  try {
    return await withTransaction(ctx.db, async (client) => {
      await client.query('SELECT 1 FROM robots WHERE id = $1 AND organization_id = $2 FOR UPDATE', [
        robot.id,
        robot.organizationId,
      ]);
      const parts = await listPartsOfRobot(client, robot.organizationId, robot.id);
      const isFirst = !parts.some((part) => part.mainPart);
      return insertPartWithSecret(client, robot, name, isFirst, new Date(ctx.clock.nowMs()));
    });
  } catch (error) {
    if ((error as { code?: string; constraint?: string }).constraint === 'robot_parts_robot_id_name_key') {
      throw new DomainError(
        'AlreadyExists',
        `part_name: machine ${robot.id} already has a part named ${JSON.stringify(name)}`,
      );
    }
    throw error;
  }
}

export async function getRobotParts(
  ctx: FleetContext,
  principal: Principal,
  robotId: string,
): Promise<PartRecord[]> {
  if (principal.kind === 'part') {
    // Machine credentials only see their own part.
    const own = await requirePart(ctx, principal, principal.partId, 'operator');
    if (own.robotId !== requireUuid('robot_id', robotId)) throw notFound('machine', robotId);
    return [own];
  }
  const robot = await requireRobot(ctx, principal, robotId, 'operator', 'robot_id');
  return listPartsOfRobot(ctx.db, robot.organizationId, robot.id);
}

export async function getRobotPart(ctx: FleetContext, principal: Principal, id: string): Promise<PartRecord> {
  return requirePart(ctx, principal, id, 'operator');
}

export async function getRobotPartByNameAndLocation(
  ctx: FleetContext,
  principal: Principal,
  input: { name: string; locationId: string },
): Promise<PartRecord> {
  const name = requireName('name', input.name, fleetLimits.nameMaxChars);
  const location = await requireLocation(ctx, principal, input.locationId, 'operator').catch(
    async (error: unknown) => {
      // Robot-scoped callers have no role on the location itself but may still look their parts up.
      if (!(error instanceof DomainError) || error.code !== 'PermissionDenied') throw error;
      return undefined;
    },
  );
  const organizationIds = location ? [location.organizationId] : organizationIdsOf(principal);
  const locationId = location?.id ?? input.locationId;
  for (const organizationId of organizationIds) {
    const parts = await findPartsByNameInLocation(ctx.db, organizationId, locationId, name);
    const found = parts.find((part) =>
      hasRole(principal, { organizationId, locationId, robotId: part.robotId, partId: part.id }, 'operator'),
    );
    if (found) return found;
  }
  throw notFound('machine part', `${name} in location ${locationId}`);
}

export function editorOf(principal: Principal): { type: EditorType; value: string } {
  return principal.kind === 'api-key'
    ? { type: 'api-key', value: principal.keyId }
    : { type: 'part-secret', value: principal.partId };
}

export async function updateRobotPart(
  ctx: FleetContext,
  principal: Principal,
  input: {
    id: string;
    name: string;
    robotConfig: Record<string, unknown> | undefined;
    lastKnownUpdate: Date | undefined;
  },
): Promise<PartRecord> {
  const part = await requirePart(ctx, principal, input.id, 'owner');
  const name = input.name === '' ? part.name : requireName('name', input.name, fleetLimits.nameMaxChars);
  const config =
    input.robotConfig === undefined ? undefined : validatePartConfig('robot_config', input.robotConfig);
  try {
    await withTransaction(ctx.db, async (client) => {
      const current = await findPart(client, part.id, [part.organizationId], { forUpdate: true });
      if (!current) throw notFound('machine part', part.id);
      requireFreshEdit(input.lastKnownUpdate, current.lastUpdated);
      const nowMs = Math.max(ctx.clock.nowMs(), current.lastUpdated.getTime() + 1);
      const now = new Date(nowMs);
      await insertPartHistory(client, { old: current, editedAt: now, editedBy: editorOf(principal) });
      await updatePartConfig(client, part.organizationId, part.id, {
        name,
        config: config ?? current.config,
        updatedAt: now,
      });
    });
  } catch (error) {
    if ((error as { constraint?: string }).constraint === 'robot_parts_robot_id_name_key') {
      throw new DomainError(
        'AlreadyExists',
        `name: machine ${part.robotId} already has a part named ${JSON.stringify(name)}`,
      );
    }
    throw error;
  }
  return reload(ctx, part);
}

export async function getRobotPartHistory(
  ctx: FleetContext,
  principal: Principal,
  id: string,
): Promise<PartHistoryRecord[]> {
  const part = await requirePart(ctx, principal, id, 'operator');
  return listPartHistory(ctx.db, part.organizationId, part.id, historyLimit);
}

export async function deleteRobotPart(
  ctx: FleetContext,
  principal: Principal,
  partId: string,
): Promise<void> {
  const part = await requirePart(ctx, principal, partId, 'owner', 'part_id');
  await withTransaction(ctx.db, async (client) => {
    await client.query('SELECT 1 FROM robots WHERE id = $1 AND organization_id = $2 FOR UPDATE', [
      part.robotId,
      part.organizationId,
    ]);
    const parts = await listPartsOfRobot(client, part.organizationId, part.robotId);
    if (part.mainPart && parts.length > 1) {
      throw failedPrecondition(
        `part ${JSON.stringify(part.id)} is the main part of machine ${part.robotId}; mark another part as main before deleting it`,
      );
    }
    await deletePartRow(client, part.organizationId, part.id);
  });
  ctx.forgetCredentials();
}

export async function markPartAsMain(ctx: FleetContext, principal: Principal, partId: string): Promise<void> {
  const part = await requirePart(ctx, principal, partId, 'owner', 'part_id');
  await withTransaction(ctx.db, async (client) => {
    await client.query('SELECT 1 FROM robots WHERE id = $1 AND organization_id = $2 FOR UPDATE', [
      part.robotId,
      part.organizationId,
    ]);
    await setMainPart(client, part.organizationId, part.robotId, part.id);
  });
}

export async function markPartForRestart(
  ctx: FleetContext,
  principal: Principal,
  partId: string,
): Promise<void> {
  const part = await requirePart(ctx, principal, partId, 'operator', 'part_id');
  await setNeedsRestart(ctx.db, part.organizationId, part.id, true);
  // The replica holding the part's live stream tells the machine at once.
  await notifyMachine(ctx.db, {
    kind: 'restart-requested',
    o: part.organizationId,
    p: part.id,
    at: ctx.clock.nowMs(),
  });
}

export async function createRobotPartSecret(
  ctx: FleetContext,
  principal: Principal,
  partId: string,
): Promise<PartRecord> {
  const part = await requirePart(ctx, principal, partId, 'owner', 'part_id');
  await withTransaction(ctx.db, async (client) => {
    const current = await findPart(client, part.id, [part.organizationId], { forUpdate: true });
    if (!current) throw notFound('machine part', part.id);
    if (current.secrets.length >= fleetLimits.enabledSecretsMax) {
      throw failedPrecondition(
        `part ${JSON.stringify(part.id)} already has ${fleetLimits.enabledSecretsMax} enabled secrets (the maximum); delete one first`,
      );
    }
    await insertPartSecret(client, {
      id: newUuid(),
      organizationId: part.organizationId,
      partId: part.id,
      secret: generateSecret(),
      createdAt: new Date(ctx.clock.nowMs()),
    });
  });
  return reload(ctx, part);
}

export async function deleteRobotPartSecret(
  ctx: FleetContext,
  principal: Principal,
  input: { partId: string; secretId: string },
): Promise<void> {
  const part = await requirePart(ctx, principal, input.partId, 'owner', 'part_id');
  const secretId = requireUuid('secret_id', input.secretId);
  if (!part.secrets.some((secret) => secret.id === secretId)) throw notFound('part secret', secretId);
  if (!(await deletePartSecretRow(ctx.db, part.organizationId, part.id, secretId)))
    throw notFound('part secret', secretId);
  ctx.forgetCredentials();
}

export async function getRobotPartMetadata(ctx: FleetContext, principal: Principal, id: string) {
  const part = await requirePart(ctx, principal, id, 'operator');
  return readMetadata(ctx.db, 'robot_parts', part.organizationId, part.id);
}

export async function updateRobotPartMetadata(
  ctx: FleetContext,
  principal: Principal,
  id: string,
  data: Record<string, unknown> | undefined,
) {
  const part = await requirePart(ctx, principal, id, 'owner');
  await writeMetadata(ctx.db, 'robot_parts', part.organizationId, part.id, validateMetadata('data', data));
}
