/**
 * `rdk:component:generic` and `rdk:service:generic` — only `DoCommand` (and `close`), which every
 * Resource already has.
 */
import type { Resource } from '../resource.ts';
import { apiEquals, componentApi, serviceApi } from '../resource-name.ts';

export const genericComponentApi = componentApi('generic');
export const genericServiceApi = serviceApi('generic');

export type Generic = Resource;

export function isGeneric(resource: Resource): resource is Generic {
  return apiEquals(resource.name.api, genericComponentApi) || apiEquals(resource.name.api, genericServiceApi);
}
