import type { HandlerContext } from '@connectrpc/connect';
import { MachineError } from '../../errors.ts';
import type { JsonObject } from '../../json.ts';
import type { CallOptions, Resource } from '../../resources/resource.ts';
import { type Api, formatApi } from '../../resources/resource-name.ts';

/**
 * Finds a ready resource of `api` by the request's `name` (short name, `remote:name` allowed). Throws
 * MachineError NotFound / FailedPrecondition (ambiguous) / Unavailable (unhealthy, with the reason).
 */
export type ResourceResolver = (api: Api, name: string) => Resource;

/** Per-resource concurrent request limit (machine-runtime.md A7.1, `VIAM_RESOURCE_REQUESTS_LIMIT`). */
export const defaultResourceRequestLimit = 100;

/**
 * Runs component calls against resolved resources: validates the name, narrows the resource to its API
 * interface, passes `extra` and the call's AbortSignal, and bounds concurrent calls per resource.
 */
export interface ResourceCalls {
  call<R extends Resource, T>(
    api: Api,
    isApi: (resource: Resource) => resource is R,
    name: string,
    extra: JsonObject | undefined,
    context: HandlerContext,
    run: (resource: R, options: CallOptions) => Promise<T>,
  ): Promise<T>;
}

export function createResourceCalls(
  resolve: ResourceResolver,
  limit: number = defaultResourceRequestLimit,
): ResourceCalls {
  const inFlight = new WeakMap<Resource, number>();
  return {
    async call(api, isApi, name, extra, context, run) {
      if (name === '')
        throw new MachineError('InvalidArgument', 'name is required (the resource short name)');
      const resource = resolve(api, name);
      if (!isApi(resource)) {
        throw new MachineError(
          'InvalidArgument',
          `resource ${JSON.stringify(name)} is not a ${formatApi(api)}`,
        );
      }
      const count = inFlight.get(resource) ?? 0;
      if (count >= limit) {
        throw new MachineError(
          'ResourceExhausted',
          `resource ${JSON.stringify(name)} already has ${count} requests in flight; the limit is ${limit}`,
        );
      }
      inFlight.set(resource, count + 1);
      try {
        return await run(resource, { extra: extra ?? {}, signal: context.signal });
      } finally {
        inFlight.set(resource, (inFlight.get(resource) ?? 1) - 1);
      }
    },
  };
}

/** `DoCommand`, the same on every component and service API. */
export function doCommandHandler<R extends Resource>(
  calls: ResourceCalls,
  api: Api,
  isApi: (resource: Resource) => resource is R,
) {
  return async (request: { name: string; command?: JsonObject | undefined }, context: HandlerContext) => {
    const result = await calls.call(api, isApi, request.name, undefined, context, (resource, options) =>
      resource.doCommand(request.command ?? {}, options),
    );
    return { result };
  };
}
