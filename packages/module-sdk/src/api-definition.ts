/**
 * One resource API a module can host and a client can call: the gRPC service, how to serve
 * resources of the API from a collection (dispatching on the request's `name`), and how to build a
 * client for a resource served elsewhere. Adding an API = one file in apis/ exporting a definition.
 */
import type { DescService } from '@bufbuild/protobuf';
import type { ConnectRouter, Transport } from '@connectrpc/connect';
import type { Resource } from './resource.ts';
import type { Api, ResourceName } from './resource-name.ts';

/** Finds the resource of this API named by a request (short name); throws NotFound. */
export type ResourceLookup<T extends Resource> = (name: string) => T;

export interface ApiDefinition<T extends Resource = Resource> {
  readonly api: Api;
  readonly service: DescService;
  /** Registers the API's service on `router`, answering from `lookup`. */
  serve(router: ConnectRouter, lookup: ResourceLookup<T>): void;
  /** A resource that forwards every call to `name` over `transport`. */
  client(name: ResourceName, transport: Transport): T;
}

/** The call options of a request: `extra` and the handler's abort signal. */
export function callOptions(extra: import('./json.ts').JsonObject | undefined, signal: AbortSignal) {
  return extra && Object.keys(extra).length > 0 ? { extra, signal } : { signal };
}
