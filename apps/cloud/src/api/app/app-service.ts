import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import { partLogsHandlers } from '../robot/part-logs-handlers.ts';
import { apiKeyHandlers } from './api-keys-handlers.ts';
import { fleetContextOf } from './fleet-messages.ts';
import { locationHandlers } from './locations-handlers.ts';
import { memberHandlers } from './members-handlers.ts';
import { organizationHandlers } from './organizations-handlers.ts';
import { partHandlers } from './parts-handlers.ts';
import { robotHandlers } from './robots-handlers.ts';

/**
 * `viam.app.v1.AppService`: the fleet-management subset the TS SDK's AppClient uses. Every other RPC
 * answers Unimplemented (Connect fills in missing methods).
 *
 * Permission matrix (owner ⊇ operator; organization role > location role > machine role; a part's own
 * credentials act as operator on that part only; foreign IDs answer NotFound like unknown ones):
 *   organizations  read: org operator      change/delete/metadata/members: org owner   create: key owning an org
 *   locations      read: location operator create/delete: org owner  update/secrets/metadata: location owner
 *   machines       read: machine operator  create: location owner   update/delete/metadata: machine owner (+ target location owner to move)
 *   parts          read/history: machine operator (or the part itself)  restart: operator  everything else: machine owner
 *   API keys       create: owner over every granted resource   list/rotate/rename/delete/copy: org owner   GetRobotAPIKeys: machine owner
 */
export function appServiceHandlers(deps: CloudDeps): Partial<ServiceImpl<typeof appPb.AppService>> {
  const ctx = fleetContextOf(deps);
  return {
    ...organizationHandlers(ctx),
    ...memberHandlers(ctx),
    ...locationHandlers(ctx),
    ...robotHandlers(ctx),
    ...partHandlers(ctx),
    ...apiKeyHandlers(ctx),
    ...partLogsHandlers(deps),
  };
}
