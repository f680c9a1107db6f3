/**
 * Turns config JSON into the MachineConfig that gets applied (A1.6): parse (paths in errors), then
 * validate the attributes of every resource whose model is built in, so a bad attribute rejects the
 * whole config with the field's path and the previous config keeps running. Modular models are
 * validated at reconfigure time by their module (a failure there marks only that resource).
 */
import type { JsonObject } from '../json.ts';
import type { ModelRegistry } from '../resources/model-registry.ts';
import {
  allResourceConfigs,
  type ConfigSource,
  type MachineConfig,
  parseMachineConfig,
} from './machine-config.ts';

export function processConfigJson(
  json: JsonObject,
  source: ConfigSource,
  registry: ModelRegistry,
): MachineConfig {
  const config = parseMachineConfig(json, { source });
  for (const resource of allResourceConfigs(config)) {
    const registration = registry.lookup(resource.api, resource.model);
    if (registration?.source !== 'builtin' || !registration.validate) continue;
    const result = registration.validate(resource, AbortSignal.timeout(5000));
    if (result instanceof Promise) result.catch(() => {}); // built-ins validate synchronously
  }
  return config;
}
