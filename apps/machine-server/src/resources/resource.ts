/**
 * What every resource (component or service, built-in or served by a module) implements.
 * Per-API interfaces extend it (apis/sensor.ts, apis/camera.ts, apis/motor.ts, apis/generic.ts);
 * the machine API (ms-api) narrows a looked-up resource with the `isX` guard of its API.
 *
 * Calls carry `CallOptions`: the request's `extra` Struct as JSON and an AbortSignal (client
 * cancellation / deadline). Errors are MachineErrors (src/errors.ts); anything else maps to Unknown.
 */
import type { JsonObject } from '../json.ts';
import type { ResourceName } from './resource-name.ts';

export interface CallOptions {
  /** The `extra` field of the request (protobuf Struct as JSON); empty when not given. */
  readonly extra?: JsonObject;
  readonly signal: AbortSignal;
}

export interface Resource {
  readonly name: ResourceName;
  /** `DoCommand`: model-specific commands. Answer `Unimplemented` (MachineError) when unsupported. */
  doCommand(command: JsonObject, options: CallOptions): Promise<JsonObject>;
  /**
   * Releases everything the resource holds. Called once, on removal, rebuild or shutdown, with a
   * deadline (30 s) expressed by `signal`.
   */
  close(signal: AbortSignal): Promise<void>;
}

/** A resource with physical motion; `StopAll` calls `stop` on every actuator. */
export interface Actuator extends Resource {
  stop(options: CallOptions): Promise<void>;
  isMoving(options: CallOptions): Promise<boolean>;
}

export function isActuator(resource: Resource): resource is Actuator {
  const candidate = resource as Partial<Actuator>;
  return typeof candidate.stop === 'function' && typeof candidate.isMoving === 'function';
}
