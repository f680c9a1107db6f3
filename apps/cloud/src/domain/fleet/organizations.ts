import { withTransaction } from '../../infra/postgres/database.ts';
import { requireRole } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { generateSecret } from '../auth/secrets.ts';
import { DomainError, failedPrecondition, invalidArgument, notFound, permissionDenied } from '../errors.ts';
import { newLocationId, newUuid } from '../shared/ids.ts';
import { requireMaxLength, requireName, requireNonEmpty, requireUuid } from '../validate.ts';
import { type FleetContext, fleetLimits, organizationIdsOf } from './fleet-context.ts';
import { validateMetadata } from './metadata.ts';
import {
  countRobotsInOrganization,
  deleteOrganization as deleteOrganizationRow,
  findOrganization,
  isNamespaceTaken,
  listOrganizationsByIds,
  type OrganizationRecord,
  readMetadata,
  updateOrganization as updateOrganizationRow,
  writeMetadata,
} from './organizations-repository.ts';

/**
 * Permissions (organizations): reads (get, metadata, members) need operator on the organization; changes
 * (update, namespace, metadata, delete, members) need organization owner. Creating an organization needs
 * an API key that owns some organization; the key becomes owner of the new one too.
 */

const namespacePattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function requireNamespace(field: string, value: string | undefined): string {
  const namespace = requireNonEmpty(field, value).trim();
  if (!namespacePattern.test(namespace)) {
    throw invalidArgument(
      field,
      'must be 1-63 lowercase letters, digits or inner hyphens, starting and ending with a letter or digit',
      namespace,
    );
  }
  return namespace;
}

/** Checks the caller's role on an organization; foreign or unknown IDs answer NotFound. */
export function requireOrganizationAccess(
  principal: Principal,
  organizationId: string | undefined,
  role: 'owner' | 'operator',
  field = 'organization_id',
): string {
  const id = requireUuid(field, organizationId);
  requireRole(principal, { organizationId: id }, role, { what: 'organization', id });
  return id;
}

async function loadOrganization(ctx: FleetContext, id: string): Promise<OrganizationRecord> {
  const organization = await findOrganization(ctx.db, id);
  if (!organization) throw notFound('organization', id);
  return organization;
}

export async function createOrganization(
  ctx: FleetContext,
  principal: Principal,
  input: { name: string },
): Promise<OrganizationRecord> {
  const name = requireName('name', input.name, fleetLimits.nameMaxChars);
  if (
    principal.kind !== 'api-key' ||
    !principal.grants.some((g) => g.role === 'owner' && g.resourceType === 'organization')
  ) {
    throw permissionDenied('creating an organization needs an API key with the organization owner role');
  }
  const organizationId = newUuid();
  await withTransaction(ctx.db, async (client) => {
    await client.query('INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)', [
      organizationId,
      name,
      new Date(ctx.clock.nowMs()),
    ]);
    const locationId = newLocationId();
    await client.query('INSERT INTO locations (id, organization_id, name) VALUES ($1, $2, $3)', [
      locationId,
      organizationId,
      'default',
    ]);
    await client.query(
      'INSERT INTO location_secrets (id, organization_id, location_id, secret) VALUES ($1, $2, $3, $4)',
      [newUuid(), organizationId, locationId, generateSecret()],
    );
    await client.query(
      `INSERT INTO authorizations (organization_id, identity_type, identity_id, role, resource_type, resource_id)
       VALUES ($1::uuid, 'api-key', $2, 'owner', 'organization', $1::uuid::text)`,
      [organizationId, principal.keyId],
    );
  });
  ctx.forgetCredentials();
  return loadOrganization(ctx, organizationId);
}

export async function listOrganizations(
  ctx: FleetContext,
  principal: Principal,
): Promise<OrganizationRecord[]> {
  const ids = organizationIdsOf(principal);
  return listOrganizationsByIds(ctx.db, ids);
}

export async function getOrganization(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
): Promise<OrganizationRecord> {
  const id = requireOrganizationAccess(principal, organizationId, 'operator');
  return loadOrganization(ctx, id);
}

export interface OrganizationChanges {
  name?: string | undefined;
  publicNamespace?: string | undefined;
  region?: string | undefined;
  cid?: string | undefined;
}

export async function updateOrganization(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
  changes: OrganizationChanges,
): Promise<OrganizationRecord> {
  const id = requireOrganizationAccess(principal, organizationId, 'owner');
  const name =
    changes.name === undefined ? undefined : requireName('name', changes.name, fleetLimits.nameMaxChars);
  const namespace =
    changes.publicNamespace === undefined
      ? undefined
      : requireNamespace('public_namespace', changes.publicNamespace);
  const region =
    changes.region === undefined ? undefined : requireMaxLength('region', changes.region.trim(), 64);
  const cid = changes.cid === undefined ? undefined : requireMaxLength('cid', changes.cid.trim(), 200);
  return withTransaction(ctx.db, async (client) => {
    if (namespace !== undefined && (await isNamespaceTaken(client, namespace, id))) {
      throw new DomainError(
        'AlreadyExists',
        `public_namespace: ${JSON.stringify(namespace)} is already taken`,
      );
    }
    const updated = await updateOrganizationRow(client, id, {
      ...(name !== undefined && { name }),
      ...(namespace !== undefined && { publicNamespace: namespace }),
      ...(region !== undefined && { defaultRegion: region }),
      ...(cid !== undefined && { cid }),
    });
    if (!updated) throw notFound('organization', id);
    return updated;
  }).catch((error: unknown) => {
    if ((error as { code?: string }).code === '23505') {
      throw new DomainError(
        'AlreadyExists',
        `public_namespace: ${JSON.stringify(namespace)} is already taken`,
      );
    }
    throw error;
  });
}

export async function isNamespaceAvailable(
  ctx: FleetContext,
  principal: Principal,
  input: { publicNamespace: string; organizationId: string },
): Promise<boolean> {
  const namespace = requireNamespace('public_namespace', input.publicNamespace);
  // The organization is optional: when given, its own namespace counts as available to it.
  const organizationId =
    input.organizationId === ''
      ? '00000000-0000-0000-0000-000000000000'
      : requireOrganizationAccess(principal, input.organizationId, 'operator');
  if (input.organizationId === '' && organizationIdsOf(principal).length === 0) throw permissionDenied();
  return !(await isNamespaceTaken(ctx.db, namespace, organizationId));
}

export async function deleteOrganization(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
): Promise<void> {
  const id = requireOrganizationAccess(principal, organizationId, 'owner');
  await withTransaction(ctx.db, async (client) => {
    await client.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [id]);
    const robots = await countRobotsInOrganization(client, id);
    if (robots > 0) {
      throw failedPrecondition(
        `organization ${JSON.stringify(id)} still has ${robots} machine(s); delete them first`,
      );
    }
    await deleteOrganizationRow(client, id);
  });
  ctx.forgetCredentials();
}

export async function getOrganizationMetadata(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
) {
  const id = requireOrganizationAccess(principal, organizationId, 'operator');
  return readMetadata(ctx.db, 'organizations', id, id);
}

export async function updateOrganizationMetadata(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
  data: Record<string, unknown> | undefined,
): Promise<void> {
  const id = requireOrganizationAccess(principal, organizationId, 'owner');
  await writeMetadata(ctx.db, 'organizations', id, id, validateMetadata('data', data));
}
