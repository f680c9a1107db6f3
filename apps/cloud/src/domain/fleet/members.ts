import { withTransaction } from '../../infra/postgres/database.ts';
import type { Principal } from '../auth/principal.ts';
import { DomainError, invalidArgument, notFound } from '../errors.ts';
import { newUuid } from '../shared/ids.ts';
import { requireListMax, requireMaxLength, requireNonEmpty, requireUuid } from '../validate.ts';
import { type AuthorizationRecord, insertAuthorization } from './api-keys-repository.ts';
import {
  type AuthorizationInput,
  type ParsedAuthorization,
  parseGrantableAuthorization,
  toRecord,
} from './authorizations.ts';
import { type FleetContext, fleetLimits, organizationIdsOf } from './fleet-context.ts';
import {
  deleteMember,
  findMemberUserByEmail,
  insertMember,
  listMembers,
  type MemberRecord,
  upsertUser,
} from './members-repository.ts';
import { requireOrganizationAccess } from './organizations.ts';

/**
 * Permissions (members): listing members needs organization operator; adding and removing members needs
 * organization owner (and owner over every resource granted). GetUserIDByEmail only finds users who are
 * members of an organization the caller belongs to.
 *
 * Deviation from Viam: there are no invite emails. CreateOrganizationInvite adds the user (created by
 * email if new) directly as a member with the given authorizations (organization operator when none).
 */

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function requireEmail(field: string, value: string): string {
  const email = requireMaxLength(
    field,
    requireNonEmpty(field, value).trim(),
    fleetLimits.emailMaxChars,
  ).toLowerCase();
  if (!emailPattern.test(email)) throw invalidArgument(field, 'must be an email address', email);
  return email;
}

export interface AddedMember {
  organizationId: string;
  email: string;
  createdAt: Date;
  authorizations: AuthorizationRecord[];
}

export async function addMemberByEmail(
  ctx: FleetContext,
  principal: Principal,
  input: { organizationId: string; email: string; authorizations: readonly AuthorizationInput[] },
): Promise<AddedMember> {
  const organizationId = requireOrganizationAccess(principal, input.organizationId, 'owner');
  const email = requireEmail('email', input.email);
  requireListMax('authorizations', input.authorizations, fleetLimits.authorizationsPerKeyMax);
  const grants: ParsedAuthorization[] = [];
  for (const [index, authorization] of input.authorizations.entries()) {
    const field = `authorizations[${index}]`;
    const parsed = await parseGrantableAuthorization(ctx, principal, authorization, field);
    if (parsed.organizationId !== organizationId)
      throw invalidArgument(`${field}.organization_id`, 'must equal organization_id', parsed.organizationId);
    grants.push(parsed);
  }
  if (grants.length === 0) {
    grants.push({
      role: 'operator',
      resourceType: 'organization',
      resourceId: organizationId,
      organizationId,
      scope: { organizationId },
    });
  }
  const now = new Date(ctx.clock.nowMs());
  return withTransaction(ctx.db, async (client) => {
    const userId = await upsertUser(client, { id: newUuid(), email, createdAt: now });
    if (!(await insertMember(client, organizationId, userId, now))) {
      throw new DomainError(
        'AlreadyExists',
        `email: ${JSON.stringify(email)} is already a member of organization ${organizationId}`,
      );
    }
    const records = grants.map((grant) => toRecord(grant, 'user', userId));
    for (const record of records) await insertAuthorization(client, record);
    return { organizationId, email, createdAt: now, authorizations: records };
  });
}

export async function listOrganizationMembers(
  ctx: FleetContext,
  principal: Principal,
  organizationId: string,
): Promise<MemberRecord[]> {
  const id = requireOrganizationAccess(principal, organizationId, 'operator');
  return listMembers(ctx.db, id);
}

export async function removeMember(
  ctx: FleetContext,
  principal: Principal,
  input: { organizationId: string; userId: string },
): Promise<void> {
  const organizationId = requireOrganizationAccess(principal, input.organizationId, 'owner');
  const userId = requireUuid('user_id', input.userId);
  const removed = await withTransaction(ctx.db, (client) => deleteMember(client, organizationId, userId));
  if (!removed) throw notFound('organization member', userId);
}

export async function getUserIdByEmail(
  ctx: FleetContext,
  principal: Principal,
  emailInput: string,
): Promise<string> {
  const email = requireEmail('email', emailInput);
  const userId = await findMemberUserByEmail(ctx.db, email, organizationIdsOf(principal));
  if (!userId) throw notFound('user', email);
  return userId;
}
