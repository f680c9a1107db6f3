import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import * as apiKeys from '../../domain/fleet/api-keys.ts';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import { principalOf } from '../context.ts';
import { apiKeyWithAuthorizationsToProto, authorizationFromProto } from './fleet-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

export function apiKeyHandlers(ctx: FleetContext): Handlers {
  return {
    async createKey(req, context) {
      return apiKeys.createKey(ctx, principalOf(context), {
        name: req.name,
        authorizations: req.authorizations.map(authorizationFromProto),
      });
    },
    async listKeys(req, context) {
      return {
        apiKeys: (await apiKeys.listKeys(ctx, principalOf(context), req.orgId)).map(
          apiKeyWithAuthorizationsToProto,
        ),
      };
    },
    async deleteKey(req, context) {
      await apiKeys.deleteKey(ctx, principalOf(context), req.id);
      return {};
    },
    async rotateKey(req, context) {
      return apiKeys.rotateKey(ctx, principalOf(context), req.id);
    },
    async renameKey(req, context) {
      return apiKeys.renameKey(ctx, principalOf(context), { id: req.id, name: req.name });
    },
    async createKeyFromExistingKeyAuthorizations(req, context) {
      return apiKeys.createKeyFromExistingKeyAuthorizations(ctx, principalOf(context), req.id);
    },
    async getRobotAPIKeys(req, context) {
      return {
        apiKeys: (await apiKeys.getRobotApiKeys(ctx, principalOf(context), req.robotId)).map(
          apiKeyWithAuthorizationsToProto,
        ),
      };
    },
  };
}
