import { hostname } from 'node:os';
import { apiKeysFromAuth, type MachineConfig } from '../../config/machine-config.ts';

/** Credential types a direct client may present (machine-runtime.md A7.3). */
export const apiKeyCredential = 'api-key';
export const locationSecretCredential = 'robot-location-secret';

/** The credentials the machine accepts, derived from the applied config (read at call time). */
export interface MachineAuthConfig {
  /** False for a local config without auth handlers: every call is allowed (A7.3). */
  readonly required: boolean;
  /** Location secrets (cloud-managed machines); accepted for any of `hostNames` as entity. */
  readonly locationSecrets: readonly string[];
  /** API key id → key: the `api-key` auth handler of the config. */
  readonly apiKeys: ReadonlyMap<string, string>;
  /** Entities a location secret is valid for: the machine's host names, with and without the port. */
  readonly hostNames: ReadonlySet<string>;
}

/**
 * Cloud-managed machines always get the location-secret handler (with every `location_secrets` entry)
 * plus the configured API keys; a local config is authenticated only when it configures API keys.
 */
export function machineAuthConfig(config: MachineConfig, port: number): MachineAuthConfig {
  const apiKeys = apiKeysFromAuth(config.auth);
  const locationSecrets = (config.cloud?.locationSecrets ?? []).map((entry) => entry.secret).filter(Boolean);
  return {
    required: config.cloud !== undefined || apiKeys.size > 0,
    locationSecrets,
    apiKeys,
    hostNames: machineHostNames(config, port),
  };
}

/** FQDNs from the cloud and `network.fqdn`, the host name, `localhost` and the bound host, each also with `:port`. */
export function machineHostNames(config: MachineConfig, port: number): Set<string> {
  const bindHost = config.network.bindAddress.slice(0, config.network.bindAddress.lastIndexOf(':'));
  const names = [
    config.cloud?.fqdn,
    config.cloud?.localFqdn,
    config.network.fqdn,
    hostname(),
    'localhost',
    '127.0.0.1',
    bindHost,
  ].filter((name): name is string => typeof name === 'string' && name !== '');
  const all = new Set<string>();
  for (const name of names) {
    all.add(name);
    all.add(`${name}:${port}`);
  }
  return all;
}
