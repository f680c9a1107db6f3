/**
 * @mcloud/module-sdk — write a module for a machine-server (or viam-server) in TypeScript.
 *
 * ```ts
 * import { defineModel, runModule, sensorDefinition } from '@mcloud/module-sdk';
 * await runModule({ models: [defineModel({ api: sensorDefinition, model: 'acme:demo:counter', create: … })] });
 * ```
 * Also the socket helpers the machine-server uses for its side of the protocol.
 */
export { type ApiDefinition, callOptions, type ResourceLookup } from './api-definition.ts';
export { type Generic, genericComponentApi, genericDefinition } from './apis/generic.ts';
export { type Readings, type Sensor, sensorApi, sensorDefinition } from './apis/sensor.ts';
export { errorMessage, ModuleError, type ModuleErrorCode, toConnectError } from './errors.ts';
export { type JsonObject, type JsonValue, jsonToValueMap, valueMapToJson } from './json.ts';
export { createLogger, type LogFields, type Logger, type LogLevel, type LogRecord } from './logger.ts';
export { type CreateContext, defineModel, type ModelDefinition, type ValidationResult } from './model.ts';
export { builtinApis, type ModuleOptions, type RunningModule, runModule, startModule } from './module.ts';
export { type ModuleArgs, parseModuleArgs } from './module-args.ts';
export type { CallOptions, Dependencies, Resource, ResourceConfig } from './resource.ts';
export {
  type Api,
  apiEquals,
  formatApi,
  formatResourceName,
  parseResourceName,
  type ResourceName,
} from './resource-name.ts';
export { formatSocketAddress, parseSocketAddress, type SocketAddress } from './socket-address.ts';
export { type SocketServer, type SocketServerOptions, startSocketServer } from './socket-server.ts';
export { createSocketTransport, maxMessageBytes, type SocketTransport } from './socket-transport.ts';
export { releaseStartUpMemory, scheduleStartUpMemoryRelease } from './start-up-memory.ts';
