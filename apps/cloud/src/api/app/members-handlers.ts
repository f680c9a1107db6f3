import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import * as members from '../../domain/fleet/members.ts';
import { principalOf } from '../context.ts';
import { authorizationFromProto, authorizationToProto } from './fleet-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

/** Members: no invite emails — CreateOrganizationInvite adds the user as a member at once (see members.ts). */
export function memberHandlers(ctx: FleetContext): Handlers {
  return {
    async listOrganizationMembers(req, context) {
      const list = await members.listOrganizationMembers(ctx, principalOf(context), req.organizationId);
      return {
        organizationId: req.organizationId,
        members: list.map((member) => ({
          userId: member.userId,
          emails: [member.email],
          dateAdded: timestampFromDate(member.dateAdded),
          ...(member.lastAccess && { lastAccess: timestampFromDate(member.lastAccess) }),
        })),
        invites: [],
      };
    },
    async createOrganizationInvite(req, context) {
      const added = await members.addMemberByEmail(ctx, principalOf(context), {
        organizationId: req.organizationId,
        email: req.email,
        authorizations: req.authorizations.map(authorizationFromProto),
      });
      return {
        invite: {
          organizationId: added.organizationId,
          email: added.email,
          createdOn: timestampFromDate(added.createdAt),
          authorizations: added.authorizations.map(authorizationToProto),
        },
      };
    },
    async deleteOrganizationMember(req, context) {
      await members.removeMember(ctx, principalOf(context), {
        organizationId: req.organizationId,
        userId: req.userId,
      });
      return {};
    },
    async getUserIDByEmail(req, context) {
      return { userId: await members.getUserIdByEmail(ctx, principalOf(context), req.email) };
    },
  };
}
