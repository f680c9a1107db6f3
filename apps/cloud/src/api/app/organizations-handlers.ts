import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import * as organizations from '../../domain/fleet/organizations.ts';
import { principalOf } from '../context.ts';
import { organizationToProto } from './fleet-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

export function organizationHandlers(ctx: FleetContext): Handlers {
  return {
    async createOrganization(req, context) {
      return {
        organization: organizationToProto(
          await organizations.createOrganization(ctx, principalOf(context), { name: req.name }),
        ),
      };
    },
    async listOrganizations(_req, context) {
      return {
        organizations: (await organizations.listOrganizations(ctx, principalOf(context))).map(
          organizationToProto,
        ),
      };
    },
    async getOrganization(req, context) {
      return {
        organization: organizationToProto(
          await organizations.getOrganization(ctx, principalOf(context), req.organizationId),
        ),
      };
    },
    async updateOrganization(req, context) {
      const updated = await organizations.updateOrganization(ctx, principalOf(context), req.organizationId, {
        name: req.name,
        publicNamespace: req.publicNamespace,
        region: req.region,
        cid: req.cid,
      });
      return { organization: organizationToProto(updated) };
    },
    async updateOrganizationNamespace(req, context) {
      const updated = await organizations.updateOrganization(ctx, principalOf(context), req.organizationId, {
        publicNamespace: req.newPublicNamespace,
      });
      return { organization: organizationToProto(updated) };
    },
    async getOrganizationNamespaceAvailability(req, context) {
      const available = await organizations.isNamespaceAvailable(ctx, principalOf(context), {
        publicNamespace: req.publicNamespace,
        organizationId: req.organizationId,
      });
      return { available };
    },
    async deleteOrganization(req, context) {
      await organizations.deleteOrganization(ctx, principalOf(context), req.organizationId);
      return {};
    },
    async getOrganizationMetadata(req, context) {
      return {
        data: (await organizations.getOrganizationMetadata(
          ctx,
          principalOf(context),
          req.organizationId,
        )) as never,
      };
    },
    async updateOrganizationMetadata(req, context) {
      await organizations.updateOrganizationMetadata(ctx, principalOf(context), req.organizationId, req.data);
      return {};
    },
  };
}
