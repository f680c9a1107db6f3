import { withTransaction } from '../../infra/postgres/database.ts';
import type { Principal } from '../auth/principal.ts';
import { storeSealedApiKeySecret } from '../auth/sealed-api-key-secrets.ts';
import { generateSecret, hashSecret } from '../auth/secrets.ts';
import { invalidArgument, notFound } from '../errors.ts';
import { newUuid } from '../shared/ids.ts';
import {
  requireListMax,
  requireMaxLength,
  requireName,
  requireNonEmptyList,
  requireUuid,
} from '../validate.ts';
import {
  type ApiKeySummary,
  deleteKeyRow,
  findKey,
  insertAuthorization,
  insertKey,
  listKeys as listKeyRows,
  listKeysWithRobotAuthorization,
  renameKeyRow,
  rotateKeySecret,
} from './api-keys-repository.ts';
import {
  type AuthorizationInput,
  type ParsedAuthorization,
  parseGrantableAuthorization,
  toRecord,
} from './authorizations.ts';
import { type FleetContext, fleetLimits, organizationIdsOf } from './fleet-context.ts';
import { requireOrganizationAccess } from './organizations.ts';
import { requireRobot } from './robots.ts';

/**
 * Permissions (API keys): creating a key needs owner over every resource it grants (no privilege
 * escalation); listing, renaming, rotating, deleting and copying keys need organization owner. Secrets
 * are shown once (create/rotate) and stored only as a hash.
 */

export interface NewKey {
  id: string;
  key: string;
}

function defaultKeyName(nowMs: number): string {
  return `key-${new Date(nowMs).toISOString()}`;
}

async function insertNewKey(
  ctx: FleetContext,
  organizationId: string,
  name: string,
  grants: readonly ParsedAuthorization[],
): Promise<NewKey> {
  const id = newUuid();
  const key = generateSecret();
  await withTransaction(ctx.db, async (client) => {
    await insertKey(client, {
      id,
      organizationId,
      name,
      secretHash: hashSecret(key),
      createdAt: new Date(ctx.clock.nowMs()),
    });
    for (const grant of grants) await insertAuthorization(client, toRecord(grant, 'api-key', id));
    await storeSealedApiKeySecret(client, organizationId, id, key);
  });
  return { id, key };
}

export async function createKey(
  ctx: FleetContext,
  principal: Principal,
  input: { name: string; authorizations: readonly AuthorizationInput[] },
): Promise<NewKey> {
  requireNonEmptyList('authorizations', input.authorizations);
  requireListMax('authorizations', input.authorizations, fleetLimits.authorizationsPerKeyMax);
  const name =
    input.name.trim() === ''
      ? defaultKeyName(ctx.clock.nowMs())
      : requireMaxLength('name', input.name.trim(), fleetLimits.nameMaxChars);
  const grants: ParsedAuthorization[] = [];
  for (const [index, authorization] of input.authorizations.entries()) {
    const field = `authorizations[${index}]`;
    if (authorization.identityId)
      throw invalidArgument(`${field}.identity_id`, 'must be empty: the server assigns the new key ID');
    if (authorization.identityType && authorization.identityType !== 'api-key') {
      throw invalidArgument(
        `${field}.identity_type`,
        'must be "api-key" or empty',
        authorization.identityType,
      );
    }
    grants.push(await parseGrantableAuthorization(ctx, principal, authorization, field));
  }
  const organizationId = grants[0]?.organizationId as string;
  const other = grants.findIndex((grant) => grant.organizationId !== organizationId);
  if (other >= 0) {
    throw invalidArgument(
      `authorizations[${other}].organization_id`,
      'must be the same organization for every authorization of a key',
    );
  }
  return insertNewKey(ctx, organizationId, name, grants);
}

/** A key in the caller's organizations; needs organization owner on the key's organization. */
async function requireOwnedKey(
  ctx: FleetContext,
  principal: Principal,
  keyId: string,
): Promise<ApiKeySummary> {
  const id = requireUuid('id', keyId);
  const key = await findKey(ctx.db, id, organizationIdsOf(principal));
  if (!key) throw notFound('API key', id);
  requireOrganizationAccess(principal, key.organizationId, 'owner');
  return key;
}

export async function listKeys(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
): Promise<ApiKeySummary[]> {
  const id = requireOrganizationAccess(principal, organizationId, 'owner', 'org_id');
  return listKeyRows(ctx.db, id);
}

export async function deleteKey(ctx: FleetContext, principal: Principal, keyId: string): Promise<void> {
  const key = await requireOwnedKey(ctx, principal, keyId);
  await withTransaction(ctx.db, (client) => deleteKeyRow(client, key.organizationId, key.id));
  ctx.forgetCredentials();
}

export async function rotateKey(ctx: FleetContext, principal: Principal, keyId: string): Promise<NewKey> {
  const key = await requireOwnedKey(ctx, principal, keyId);
  const secret = generateSecret();
  await withTransaction(ctx.db, async (client) => {
    await rotateKeySecret(client, key.organizationId, key.id, hashSecret(secret));
    await storeSealedApiKeySecret(client, key.organizationId, key.id, secret);
  });
  ctx.forgetCredentials();
  return { id: key.id, key: secret };
}

export async function renameKey(
  ctx: FleetContext,
  principal: Principal,
  input: { id: string; name: string },
): Promise<{ id: string; name: string }> {
  const key = await requireOwnedKey(ctx, principal, input.id);
  const name = requireName('name', input.name, fleetLimits.nameMaxChars);
  await renameKeyRow(ctx.db, key.organizationId, key.id, name);
  return { id: key.id, name };
}

export async function createKeyFromExistingKeyAuthorizations(
  ctx: FleetContext,
  principal: Principal,
  keyId: string,
): Promise<NewKey> {
  const key = await requireOwnedKey(ctx, principal, keyId);
  const grants: ParsedAuthorization[] = [];
  for (const [index, a] of key.authorizations.entries()) {
    grants.push(
      await parseGrantableAuthorization(
        ctx,
        principal,
        {
          authorizationType: 'role',
          authorizationId: `${a.resourceType}_${a.role}`,
          resourceType: a.resourceType,
          resourceId: a.resourceId,
          organizationId: a.organizationId,
        },
        `authorizations[${index}]`,
      ),
    );
  }
  return insertNewKey(ctx, key.organizationId, `${key.name}-copy`.slice(0, fleetLimits.nameMaxChars), grants);
}

export async function getRobotApiKeys(
  ctx: FleetContext,
  principal: Principal,
  robotId: string,
): Promise<ApiKeySummary[]> {
  const robot = await requireRobot(ctx, principal, robotId, 'owner', 'robot_id');
  return listKeysWithRobotAuthorization(ctx.db, robot.organizationId, robot.id);
}
