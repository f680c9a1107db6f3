/** `rdk:component:generic` — viam.component.generic.v1.GenericService (DoCommand only). */
import { createClient } from '@connectrpc/connect';
import { genericPb } from '@mcloud/protocol/machine';
import type { ApiDefinition } from '../api-definition.ts';
import type { Resource } from '../resource.ts';
import type { Api } from '../resource-name.ts';
import { doCommandHandler, remoteResource } from './common.ts';

export const genericComponentApi: Api = { namespace: 'rdk', type: 'component', subtype: 'generic' };

export type Generic = Resource;

export const genericDefinition: ApiDefinition<Generic> = {
  api: genericComponentApi,
  service: genericPb.GenericService,
  serve(router, lookup) {
    router.service(genericPb.GenericService, { doCommand: doCommandHandler(lookup) });
  },
  client: (name, transport) =>
    remoteResource(name, createClient(genericPb.GenericService, transport).doCommand),
};
