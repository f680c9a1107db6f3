import type { ServiceImpl } from '@connectrpc/connect';
import type { genericPb, genericServicePb } from '@mcloud/protocol/machine';
import { genericComponentApi, genericServiceApi, isGeneric } from '../../resources/apis/generic.ts';
import { doCommandHandler, type ResourceCalls } from './resource-calls.ts';

/** `viam.component.generic.v1.GenericService`: DoCommand. */
export function genericComponentHandlers(
  calls: ResourceCalls,
): Partial<ServiceImpl<typeof genericPb.GenericService>> {
  return { doCommand: doCommandHandler(calls, genericComponentApi, isGeneric) };
}

/** `viam.service.generic.v1.GenericService`: DoCommand. */
export function genericServiceHandlers(
  calls: ResourceCalls,
): Partial<ServiceImpl<typeof genericServicePb.GenericService>> {
  return { doCommand: doCommandHandler(calls, genericServiceApi, isGeneric) };
}
