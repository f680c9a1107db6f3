/** Pieces every API shares: DoCommand served and called, and the base of a client resource. */
import type { HandlerContext } from '@connectrpc/connect';
import type { ResourceLookup } from '../api-definition.ts';
import type { JsonObject } from '../json.ts';
import type { Resource } from '../resource.ts';
import type { ResourceName } from '../resource-name.ts';

interface DoCommandRequest {
  name: string;
  command?: JsonObject;
}

type DoCommandCall = (
  request: { name: string; command: JsonObject },
  options: { signal: AbortSignal },
) => Promise<{ result?: JsonObject }>;

export function doCommandHandler(lookup: ResourceLookup<Resource>) {
  return async (request: DoCommandRequest, context: HandlerContext) => ({
    result: await lookup(request.name).doCommand(request.command ?? {}, { signal: context.signal }),
  });
}

/** A client resource: DoCommand over `doCommand`, `close` releases nothing (the owner closes it). */
export function remoteResource(name: ResourceName, doCommand: DoCommandCall): Resource {
  return {
    name,
    async doCommand(command, options) {
      const response = await doCommand({ name: name.name, command }, { signal: options.signal });
      return response.result ?? {};
    },
    close: async () => {},
  };
}
