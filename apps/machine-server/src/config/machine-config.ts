/**
 * The machine configuration, parsed once into one typed object (machine-runtime.md A1.1). The same
 * parser reads a local file, the cache and the cloud's RobotConfig (converted to this JSON shape by
 * cloud/robot-config-json.ts). Every error names the JSON path of the offending field; a config that
 * fails to parse is rejected as a whole and the previous one keeps running.
 *
 * Sections the machine-server does not act on (remotes, processes, jobs, tracing, packages' content)
 * are kept as validated-but-opaque JSON so the diff still sees them.
 */
import { invalidConfig } from '../errors.ts';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.ts';
import { type LogLevel, parseLogLevel } from '../logging/logger.ts';
import {
  parseResourceConfig,
  type ResourceConfig,
  type ResourceSection,
} from '../resources/resource-config.ts';
import { formatResourceName, isValidSegment } from '../resources/resource-name.ts';
import { parseGoDurationMs } from './go-duration.ts';

export const defaultBindAddress = 'localhost:8080';
export const defaultRefreshIntervalMs = 15_000;

export interface LocationSecret {
  readonly id: string;
  readonly secret: string;
}

export interface CloudSection {
  /** Part ID. */
  readonly id: string;
  readonly secret?: string;
  readonly apiKey?: { readonly id: string; readonly key: string };
  readonly appAddress?: string;
  /** `refresh_interval`; default 15 s (the spec's "configuration check interval"). */
  readonly refreshIntervalMs: number;
  readonly locationSecrets: readonly LocationSecret[];
  readonly locationId?: string;
  readonly primaryOrgId?: string;
  readonly machineId?: string;
  readonly managedBy?: string;
  readonly fqdn?: string;
  readonly localFqdn?: string;
  readonly signalingAddress?: string;
  readonly signalingInsecure: boolean;
  readonly tlsCertificate?: string;
  readonly tlsPrivateKey?: string;
}

export interface NetworkSection {
  readonly fqdn?: string;
  /** `host:port`; default `localhost:8080`. */
  readonly bindAddress: string;
  /** True when `bind_address` was not given. */
  readonly bindAddressDefaulted: boolean;
  readonly tlsCertFile?: string;
  readonly tlsKeyFile?: string;
  readonly noTls: boolean;
  /** `sessions.heartbeat_window`; default 2 s, allowed 30 ms – 1 min. */
  readonly heartbeatWindowMs: number;
}

export interface AuthHandler {
  /** Only `api-key` is accepted. */
  readonly type: string;
  readonly config: JsonObject;
}

export interface AuthSection {
  readonly handlers: readonly AuthHandler[];
  readonly tlsAuthEntities: readonly string[];
  readonly externalAuthConfig?: JsonObject;
}

export interface ModuleConfig {
  readonly name: string;
  readonly executablePath: string;
  readonly type: 'local' | 'registry';
  readonly moduleId?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly logLevel?: LogLevel;
  readonly tcpMode: boolean;
  /** `first_run_timeout`; default 1 h. */
  readonly firstRunTimeoutMs: number;
  /** `status.error` from the cloud: the module is invalid and skipped. */
  readonly statusError?: string;
  /** e.g. `modules[0]`. */
  readonly path: string;
}

export interface PackageConfig {
  readonly name: string;
  readonly package: string;
  readonly version: string;
  readonly type: string;
  readonly statusError?: string;
}

export interface LogPatternConfig {
  /** Regular-expression-like pattern; validated (and skipped with a warning) by the logging module. */
  readonly pattern: string;
  readonly level: string;
}

export interface MaintenanceConfig {
  /** Full resource name of the sensor, e.g. `rdk:component:sensor/maint`, as written. */
  readonly sensorName: string;
  readonly maintenanceAllowedKey: string;
}

export interface MachineConfig {
  readonly cloud?: CloudSection;
  readonly components: readonly ResourceConfig[];
  readonly services: readonly ResourceConfig[];
  readonly modules: readonly ModuleConfig[];
  readonly packages: readonly PackageConfig[];
  readonly remotes: readonly JsonObject[];
  readonly processes: readonly JsonObject[];
  readonly jobs: readonly JsonObject[];
  readonly network: NetworkSection;
  readonly auth: AuthSection;
  readonly debug: boolean;
  readonly enableWebProfile: boolean;
  readonly log: readonly LogPatternConfig[];
  readonly revision: string;
  readonly maintenance?: MaintenanceConfig;
  readonly disableLogDeduplication: boolean;
  readonly tracing?: JsonObject;
  /** The JSON the config was parsed from (after env substitution). */
  readonly raw: JsonObject;
}

export type ConfigSource = 'local' | 'cloud';

export interface ParseMachineConfigOptions {
  /** `local`: the cloud section needs a secret or API key. `cloud`: it needs fqdn and local_fqdn. */
  source: ConfigSource;
}

const topLevelKeys = new Set([
  'cloud',
  'modules',
  'remotes',
  'components',
  'processes',
  'services',
  'packages',
  'network',
  'auth',
  'debug',
  'enable_web_profile',
  'log',
  'revision',
  'maintenance',
  'disable_log_deduplication',
  'jobs',
  'tracing',
  'disable_partial_start',
  'overwrite_fragment_status',
  'agent',
  'fragments',
  'fragment_mods',
]);

/** Parses JSON text after `$VAR` / `${VAR}` substitution from `env`. */
export function parseMachineConfigText(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  options: ParseMachineConfigOptions,
): MachineConfig {
  let json: unknown;
  try {
    json = JSON.parse(substituteEnv(text, env));
  } catch (error) {
    throw invalidConfig('(config file)', `is not valid JSON: ${(error as Error).message}`);
  }
  return parseMachineConfig(json, options);
}

export function parseMachineConfig(json: unknown, options: ParseMachineConfigOptions): MachineConfig {
  if (!isJsonObject(json)) throw invalidConfig('(config)', 'must be a JSON object', json);
  for (const key of Object.keys(json)) {
    if (!topLevelKeys.has(key)) throw invalidConfig(key, 'is not a configuration field');
  }
  const components = parseResources(json.components, 'components');
  const services = parseResources(json.services, 'services');
  const config: MachineConfig = {
    components,
    services,
    modules: arrayOf(json.modules, 'modules', parseModule),
    packages: arrayOf(json.packages, 'packages', parsePackage),
    remotes: arrayOf(json.remotes, 'remotes', parseRemote),
    processes: arrayOf(json.processes, 'processes', objectEntry),
    jobs: arrayOf(json.jobs, 'jobs', objectEntry),
    network: parseNetwork(json.network),
    auth: parseAuth(json.auth),
    debug: bool(json.debug, 'debug'),
    enableWebProfile: bool(json.enable_web_profile, 'enable_web_profile'),
    log: arrayOf(json.log, 'log', parseLogPattern),
    revision: optionalString(json.revision, 'revision') ?? '',
    disableLogDeduplication: bool(json.disable_log_deduplication, 'disable_log_deduplication'),
    raw: json,
    ...(json.cloud === undefined || json.cloud === null
      ? {}
      : { cloud: parseCloud(json.cloud, options.source) }),
    ...(json.maintenance === undefined || json.maintenance === null
      ? {}
      : { maintenance: parseMaintenance(json.maintenance) }),
    ...(isJsonObject(json.tracing) ? { tracing: json.tracing } : {}),
  };
  return config;
}

/** Every configured component and service. */
export function allResourceConfigs(config: MachineConfig): ResourceConfig[] {
  return [...config.components, ...config.services];
}

/** API keys of the `api-key` auth handler: key id → key (the legacy `keys` list is skipped). */
export function apiKeysFromAuth(auth: AuthSection): Map<string, string> {
  const keys = new Map<string, string>();
  for (const handler of auth.handlers) {
    if (handler.type !== 'api-key') continue;
    for (const [id, key] of Object.entries(handler.config)) {
      if (id !== 'keys' && typeof key === 'string') keys.set(id, key);
    }
  }
  return keys;
}

/** Shell-style `$VAR` / `${VAR}` substitution (unset → empty); `$$` is a literal `$`. */
export function substituteEnv(text: string, env: Readonly<Record<string, string | undefined>>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced, bare) => {
      if (whole === '$$') return '$';
      const value = env[(braced ?? bare) as string] ?? '';
      return JSON.stringify(value).slice(1, -1);
    },
  );
}

function parseResources(value: JsonValue | undefined, section: ResourceSection): ResourceConfig[] {
  const configs = arrayOf(value, section, (entry, path) => parseResourceConfig(entry, section, path));
  const seen = new Map<string, string>();
  for (const config of configs) {
    const key = formatResourceName(config.resourceName);
    // Duplicates are not rejected here: the graph marks both unhealthy (A2.4) so the rest still runs.
    if (!seen.has(key)) seen.set(key, config.path);
  }
  return configs;
}

function parseCloud(value: JsonValue, source: ConfigSource): CloudSection {
  if (!isJsonObject(value)) throw invalidConfig('cloud', 'must be an object', value);
  const id = optionalString(value.id, 'cloud.id');
  if (!id) throw invalidConfig('cloud.id', 'is required (the machine part ID)');
  const secret = optionalString(value.secret, 'cloud.secret');
  let apiKey: { id: string; key: string } | undefined;
  if (value.api_key !== undefined && value.api_key !== null) {
    if (!isJsonObject(value.api_key))
      throw invalidConfig('cloud.api_key', 'must be an object {id, key}', '…');
    const keyId = optionalString(value.api_key.id, 'cloud.api_key.id');
    const key = optionalString(value.api_key.key, 'cloud.api_key.key');
    if (keyId && key) apiKey = { id: keyId, key };
    else if (keyId || key) throw invalidConfig('cloud.api_key', 'needs both "id" and "key"');
  }
  if (source === 'local' && !secret && !apiKey) {
    throw invalidConfig('cloud', 'needs "secret" or "api_key" {id, key} to authenticate the machine');
  }
  const fqdn = optionalString(value.fqdn, 'cloud.fqdn');
  const localFqdn = optionalString(value.local_fqdn, 'cloud.local_fqdn');
  if (source === 'cloud' && (!fqdn || !localFqdn)) {
    throw invalidConfig(
      fqdn ? 'cloud.local_fqdn' : 'cloud.fqdn',
      'is required in a configuration from the cloud',
    );
  }
  const refresh = value.refresh_interval;
  const refreshIntervalMs =
    refresh === undefined || refresh === null || refresh === ''
      ? defaultRefreshIntervalMs
      : parseGoDurationMs(refresh, 'cloud.refresh_interval');
  if (refreshIntervalMs < 100 || refreshIntervalMs > 86_400_000) {
    throw invalidConfig('cloud.refresh_interval', 'must be between 100ms and 24h', refresh);
  }
  const locationSecrets = arrayOf(value.location_secrets, 'cloud.location_secrets', (entry, path) => {
    if (!isJsonObject(entry)) throw invalidConfig(path, 'must be an object {id, secret}');
    const secretValue = optionalString(entry.secret, `${path}.secret`);
    if (!secretValue) throw invalidConfig(`${path}.secret`, 'is required');
    return { id: optionalString(entry.id, `${path}.id`) ?? '', secret: secretValue };
  });
  const legacyLocationSecret = optionalString(value.location_secret, 'cloud.location_secret');
  if (legacyLocationSecret && !locationSecrets.some((entry) => entry.secret === legacyLocationSecret)) {
    locationSecrets.push({ id: '', secret: legacyLocationSecret });
  }
  const strings = {
    appAddress: optionalString(value.app_address, 'cloud.app_address'),
    locationId: optionalString(value.location_id, 'cloud.location_id'),
    primaryOrgId: optionalString(value.primary_org_id, 'cloud.primary_org_id'),
    machineId: optionalString(value.machine_id, 'cloud.machine_id'),
    managedBy: optionalString(value.managed_by, 'cloud.managed_by'),
    fqdn,
    localFqdn,
    signalingAddress: optionalString(value.signaling_address, 'cloud.signaling_address'),
    tlsCertificate: optionalString(value.tls_certificate, 'cloud.tls_certificate'),
    tlsPrivateKey: optionalString(value.tls_private_key, 'cloud.tls_private_key'),
  };
  return {
    id,
    refreshIntervalMs,
    locationSecrets,
    signalingInsecure: bool(value.signaling_insecure, 'cloud.signaling_insecure'),
    ...definedOnly({ ...strings, secret, apiKey }),
  };
}

function parseNetwork(value: JsonValue | undefined): NetworkSection {
  if (value === undefined || value === null) {
    return {
      bindAddress: defaultBindAddress,
      bindAddressDefaulted: true,
      noTls: false,
      heartbeatWindowMs: 2000,
    };
  }
  if (!isJsonObject(value)) throw invalidConfig('network', 'must be an object', value);
  const bind = optionalString(value.bind_address, 'network.bind_address');
  if (bind !== undefined && !/^[^\s]*:\d{1,5}$/.test(bind)) {
    throw invalidConfig('network.bind_address', 'must be host:port (e.g. localhost:8080 or :8080)', bind);
  }
  const certFile = optionalString(value.tls_cert_file, 'network.tls_cert_file');
  const keyFile = optionalString(value.tls_key_file, 'network.tls_key_file');
  if (Boolean(certFile) !== Boolean(keyFile)) {
    throw invalidConfig(certFile ? 'network.tls_key_file' : 'network.tls_cert_file', 'must be set together');
  }
  let heartbeatWindowMs = 2000;
  const sessions = value.sessions;
  if (isJsonObject(sessions) && sessions.heartbeat_window !== undefined) {
    heartbeatWindowMs = parseGoDurationMs(sessions.heartbeat_window, 'network.sessions.heartbeat_window');
    if (heartbeatWindowMs < 30 || heartbeatWindowMs > 60_000) {
      throw invalidConfig(
        'network.sessions.heartbeat_window',
        'must be between 30ms and 1m',
        sessions.heartbeat_window,
      );
    }
  }
  return {
    bindAddress: bind ?? defaultBindAddress,
    bindAddressDefaulted: bind === undefined,
    noTls: bool(value.no_tls, 'network.no_tls'),
    heartbeatWindowMs,
    ...definedOnly({
      fqdn: optionalString(value.fqdn, 'network.fqdn'),
      tlsCertFile: certFile,
      tlsKeyFile: keyFile,
    }),
  };
}

function parseAuth(value: JsonValue | undefined): AuthSection {
  if (value === undefined || value === null) return { handlers: [], tlsAuthEntities: [] };
  if (!isJsonObject(value)) throw invalidConfig('auth', 'must be an object', '…');
  const seen = new Set<string>();
  const handlers = arrayOf(value.handlers, 'auth.handlers', (entry, path) => {
    if (!isJsonObject(entry)) throw invalidConfig(path, 'must be an object {type, config}');
    const type = entry.type;
    if (type !== 'api-key') throw invalidConfig(`${path}.type`, 'only "api-key" handlers are accepted', type);
    if (seen.has(type)) throw invalidConfig(`${path}.type`, 'duplicate handler type', type);
    seen.add(type);
    if (!isJsonObject(entry.config))
      throw invalidConfig(`${path}.config`, 'must be an object of keyId → key');
    const keys = entry.config.keys;
    if (!Array.isArray(keys) || keys.length === 0) {
      throw invalidConfig(`${path}.config.keys`, 'must list at least one key id');
    }
    return { type, config: entry.config };
  });
  const tlsAuthEntities = arrayOf(value.tls_auth_entities, 'auth.tls_auth_entities', (entry, path) => {
    if (typeof entry !== 'string') throw invalidConfig(path, 'must be a string', entry);
    return entry;
  });
  return {
    handlers,
    tlsAuthEntities,
    ...(isJsonObject(value.external_auth_config) ? { externalAuthConfig: value.external_auth_config } : {}),
  };
}

function parseModule(value: JsonValue, path: string): ModuleConfig {
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object', value);
  const name = optionalString(value.name, `${path}.name`);
  if (!name || !isValidSegment(name))
    throw invalidConfig(`${path}.name`, 'is required and must be [A-Za-z0-9_-]', name);
  if (name === 'parent') throw invalidConfig(`${path}.name`, '"parent" is reserved', name);
  const executablePath = optionalString(value.executable_path ?? value.path, `${path}.executable_path`);
  if (!executablePath) throw invalidConfig(`${path}.executable_path`, 'is required');
  const type = value.type === undefined || value.type === '' ? 'local' : value.type;
  if (type !== 'local' && type !== 'registry')
    throw invalidConfig(`${path}.type`, 'must be "local" or "registry"', type);
  const env: Record<string, string> = {};
  if (value.env !== undefined && value.env !== null) {
    if (!isJsonObject(value.env)) throw invalidConfig(`${path}.env`, 'must be an object of strings');
    for (const [key, entry] of Object.entries(value.env)) {
      if (typeof entry !== 'string') throw invalidConfig(`${path}.env.${key}`, 'must be a string', entry);
      env[key] = entry;
    }
  }
  let logLevel: LogLevel | undefined;
  if (value.log_level !== undefined && value.log_level !== '') {
    logLevel = parseLogLevel(value.log_level);
    if (!logLevel)
      throw invalidConfig(`${path}.log_level`, 'must be one of debug, info, warn, error', value.log_level);
  }
  let firstRunTimeoutMs = 3_600_000;
  if (value.first_run_timeout !== undefined && value.first_run_timeout !== '') {
    const parsed = parseGoDurationMs(value.first_run_timeout, `${path}.first_run_timeout`);
    if (parsed > 0) firstRunTimeoutMs = parsed;
  }
  return {
    name,
    executablePath,
    type,
    env,
    tcpMode: bool(value.tcp_mode, `${path}.tcp_mode`),
    firstRunTimeoutMs,
    path,
    ...definedOnly({
      moduleId: optionalString(value.module_id, `${path}.module_id`),
      logLevel,
      statusError: statusError(value.status),
    }),
  };
}

function parsePackage(value: JsonValue, path: string): PackageConfig {
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object', value);
  const name = optionalString(value.name, `${path}.name`);
  if (!name) throw invalidConfig(`${path}.name`, 'is required');
  const pkg = optionalString(value.package, `${path}.package`);
  if (!pkg) throw invalidConfig(`${path}.package`, 'is required ("<org id>/<name>")');
  return {
    name,
    package: pkg,
    version: optionalString(value.version, `${path}.version`) || 'latest',
    type: optionalString(value.type, `${path}.type`) || 'archive',
    ...definedOnly({ statusError: statusError(value.status) }),
  };
}

function parseRemote(value: JsonValue, path: string): JsonObject {
  const remote = objectEntry(value, path);
  const name = optionalString(remote.name, `${path}.name`);
  if (!name || !isValidSegment(name))
    throw invalidConfig(`${path}.name`, 'is required and must be [A-Za-z0-9_-]', name);
  if (!optionalString(remote.address, `${path}.address`))
    throw invalidConfig(`${path}.address`, 'is required');
  return remote;
}

function parseLogPattern(value: JsonValue, path: string): LogPatternConfig {
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object {pattern, level}', value);
  const pattern = optionalString(value.pattern, `${path}.pattern`);
  const level = optionalString(value.level, `${path}.level`);
  if (pattern === undefined) throw invalidConfig(`${path}.pattern`, 'is required');
  return { pattern, level: level ?? '' };
}

function parseMaintenance(value: JsonValue): MaintenanceConfig {
  if (!isJsonObject(value))
    throw invalidConfig('maintenance', 'must be an object {sensor_name, maintenance_allowed_key}');
  let sensorName: string | undefined;
  if (isJsonObject(value.sensor_name)) {
    // RobotConfig carries a common.v1.ResourceName {namespace, type, subtype, name}.
    const n = value.sensor_name;
    sensorName = `${String(n.namespace)}:${String(n.type)}:${String(n.subtype)}/${String(n.name)}`;
  } else {
    sensorName = optionalString(value.sensor_name, 'maintenance.sensor_name');
  }
  const key = optionalString(value.maintenance_allowed_key, 'maintenance.maintenance_allowed_key');
  if (!sensorName)
    throw invalidConfig('maintenance.sensor_name', 'is required (e.g. "rdk:component:sensor/maint")');
  if (!key) throw invalidConfig('maintenance.maintenance_allowed_key', 'is required');
  return { sensorName, maintenanceAllowedKey: key };
}

function statusError(value: JsonValue | undefined): string | undefined {
  return isJsonObject(value) && typeof value.error === 'string' && value.error !== ''
    ? value.error
    : undefined;
}

function objectEntry(value: JsonValue, path: string): JsonObject {
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object', value);
  return value;
}

function arrayOf<T>(
  value: JsonValue | undefined,
  path: string,
  parse: (entry: JsonValue, path: string) => T,
): T[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidConfig(path, 'must be an array', value);
  return value.map((entry, index) => parse(entry, `${path}[${index}]`));
}

function bool(value: JsonValue | undefined, path: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw invalidConfig(path, 'must be true or false', value);
  return value;
}

function optionalString(value: JsonValue | undefined, path: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidConfig(path, 'must be a string', value);
  return value;
}

function definedOnly<T extends object>(record: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
