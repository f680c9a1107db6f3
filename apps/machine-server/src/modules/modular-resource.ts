/**
 * Resources served by a module, as the machine-server sees them: objects implementing the resource
 * interfaces of their API (Sensor, Generic, …) whose every call goes to the module over gRPC with the
 * resource's short name (appendix §2.5). `close` sends `RemoveResource`. An API without a proxy here
 * still builds; its calls answer Unimplemented. Adding an API = an ApiDefinition in the module SDK
 * (apis/*) and one entry in `proxiedApis`.
 */
import type { Transport } from '@connectrpc/connect';
import {
  type ApiDefinition,
  genericDefinition,
  type Resource as ModuleSdkResource,
  sensorDefinition,
} from '@mcloud/module-sdk';
import { MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import type { CallOptions, Resource } from '../resources/resource.ts';
import {
  apiEquals,
  formatApi,
  formatResourceName,
  type ResourceName,
  shortName,
} from '../resources/resource-name.ts';
import { errorFromModule } from './rpc-errors.ts';

/** APIs whose calls are forwarded. */
const proxiedApis: readonly ApiDefinition[] = [sensorDefinition, genericDefinition];

export interface ModularResourceOptions {
  readonly name: ResourceName;
  readonly moduleName: string;
  readonly transport: Transport;
  /** `RemoveResource` on the module (the module may already be gone). */
  remove(signal: AbortSignal): Promise<void>;
}

export function createModularResource(options: ModularResourceOptions): Resource {
  const label = `module ${options.moduleName}: ${formatResourceName(options.name)}`;
  const definition = proxiedApis.find((candidate) => apiEquals(candidate.api, options.name.api));
  const client: ModuleSdkResource | undefined = definition?.client(
    { api: options.name.api, name: shortName(options.name) },
    options.transport,
  );
  const forward = <A extends unknown[], R>(
    method: string,
    call: ((...args: A) => Promise<R>) | undefined,
  ) => {
    return async (...args: A): Promise<R> => {
      if (!call) {
        throw new MachineError(
          'Unimplemented',
          `${method} of API ${formatApi(options.name.api)} is not forwarded to modules by this machine-server`,
        );
      }
      try {
        return await call(...args);
      } catch (error) {
        throw errorFromModule(error, `${label} ${method}`);
      }
    };
  };
  const proxy: Resource & Record<string, unknown> = {
    name: options.name,
    doCommand: forward(
      'DoCommand',
      client ? (command: JsonObject, call: CallOptions) => client.doCommand(command, call) : undefined,
    ),
    close: (signal: AbortSignal) => options.remove(signal),
  };
  // Every other method of the API's client (getReadings, …) forwarded as is.
  if (client) {
    for (const [key, value] of Object.entries(client)) {
      if (key === 'name' || key === 'doCommand' || key === 'close' || typeof value !== 'function') continue;
      proxy[key] = forward(key, value as (...args: unknown[]) => Promise<unknown>);
    }
  }
  return proxy;
}
