/**
 * What a module's resources implement, and what a constructor receives. The shapes match the
 * machine-server's resource interfaces, so the same code can run built in or in a module.
 */
import type { JsonObject } from './json.ts';
import type { Api, ResourceName } from './resource-name.ts';

export interface CallOptions {
  /** The request's `extra` Struct; empty when not given. */
  readonly extra?: JsonObject;
  readonly signal: AbortSignal;
}

export interface Resource {
  readonly name: ResourceName;
  /** `DoCommand`; throw ModuleError('Unimplemented', …) when unsupported. */
  doCommand(command: JsonObject, options: CallOptions): Promise<JsonObject>;
  /** Releases what the resource holds (RemoveResource, rebuild, module shutdown). */
  close(signal: AbortSignal): Promise<void>;
}

/** The `viam.app.v1.ComponentConfig` a module receives, as plain data. */
export interface ResourceConfig {
  readonly name: string;
  readonly api: Api;
  /** Model triple, e.g. `acme:demo:counter`. */
  readonly model: string;
  readonly attributes: JsonObject;
  readonly dependsOn: readonly string[];
  /** `log_configuration.level` (`debug`/`info`/`warn`/`error`), when set. */
  readonly logLevel?: string;
}

/** Dependencies by full resource name; resources of other modules and built-ins are clients on the parent. */
export interface Dependencies {
  readonly all: ReadonlyMap<string, Resource>;
  /** The dependency `api/name`; throws NotFound when absent. */
  get<T extends Resource = Resource>(api: Api, name: string): T;
}
