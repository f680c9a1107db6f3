/**
 * A component or service entry of the machine configuration, normalized (machine-runtime.md A2.1):
 * `{name, api | (namespace + type), model, frame, depends_on[], log_configuration: {level},
 *   service_configs: [{type, attributes}], attributes}`.
 *
 * Legacy form: `type` = subtype (`"type": "sensor"`) with optional `namespace` (default `rdk`); the
 * component/service type comes from the section. Services without a model get `rdk:builtin:builtin`,
 * without a name `builtin`. Errors name the JSON path (`components[3].model`).
 */
import { invalidConfig } from '../errors.ts';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.ts';
import { type LogLevel, parseLogLevel } from '../logging/logger.ts';
import {
  type Api,
  builtinModel,
  checkResourceNameText,
  componentType,
  createApi,
  createResourceName,
  isValidSegment,
  type Model,
  parseApi,
  parseModel,
  type ResourceName,
  serviceType,
} from './resource-name.ts';

export type ResourceSection = 'components' | 'services';

/** An associated config, e.g. `{type: "data_manager", attributes: {capture_methods: [...]}}`. */
export interface AssociatedConfig {
  readonly type: string;
  readonly attributes: JsonObject;
}

export interface ResourceConfig {
  /** The configured name (may contain `:` for a remote chain). */
  readonly name: string;
  readonly api: Api;
  readonly model: Model;
  /** `api` + `name`. */
  readonly resourceName: ResourceName;
  /** Frame system entry as written (kept opaque). */
  readonly frame?: JsonValue;
  /** Explicit dependencies: short names or full resource names, as written. */
  readonly dependsOn: readonly string[];
  /** `log_configuration.level`. */
  readonly logLevel?: LogLevel;
  readonly serviceConfigs: readonly AssociatedConfig[];
  readonly attributes: JsonObject;
  /** Where the entry sits in the config, e.g. `components[3]`; prefixes error paths. */
  readonly path: string;
}

export function parseResourceConfig(value: unknown, section: ResourceSection, path: string): ResourceConfig {
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object', value);
  const isService = section === 'services';
  const api = parseResourceApi(value, isService, path);
  const rawName = value.name;
  const name =
    isService && (rawName === undefined || rawName === '')
      ? 'builtin'
      : checkResourceNameText(rawName, `${path}.name`);
  const model =
    value.model === undefined || value.model === ''
      ? isService
        ? builtinModel('builtin')
        : missing(`${path}.model`)
      : parseModel(value.model, `${path}.model`);
  const config: ResourceConfig = {
    name,
    api,
    model,
    resourceName: createResourceName(api, name),
    dependsOn: parseDependsOn(value.depends_on, `${path}.depends_on`),
    serviceConfigs: parseServiceConfigs(
      value.service_configs ?? value.service_config,
      `${path}.service_configs`,
    ),
    attributes: parseAttributes(value.attributes, `${path}.attributes`),
    path,
    ...optional('frame', value.frame),
    ...optional('logLevel', parseLogConfiguration(value.log_configuration, `${path}.log_configuration`)),
  };
  return config;
}

/** The JSON form written back (cache, diff text): always the full `api` triple and model triple. */
export function resourceConfigToJson(config: ResourceConfig): JsonObject {
  const json: JsonObject = {
    name: config.name,
    api: `${config.api.namespace}:${config.api.type}:${config.api.subtype}`,
    model: `${config.model.namespace}:${config.model.family}:${config.model.name}`,
    attributes: config.attributes,
  };
  if (config.dependsOn.length > 0) json.depends_on = [...config.dependsOn];
  if (config.frame !== undefined) json.frame = config.frame;
  if (config.logLevel) json.log_configuration = { level: config.logLevel };
  if (config.serviceConfigs.length > 0) {
    json.service_configs = config.serviceConfigs.map((entry) => ({
      type: entry.type,
      attributes: entry.attributes,
    }));
  }
  return json;
}

function parseResourceApi(value: JsonObject, isService: boolean, path: string): Api {
  if (typeof value.api === 'string' && value.api !== '') return parseApi(value.api, `${path}.api`);
  if (value.api !== undefined && value.api !== '')
    throw invalidConfig(`${path}.api`, 'must be a string', value.api);
  const subtype = value.type;
  if (typeof subtype !== 'string' || !isValidSegment(subtype)) {
    throw invalidConfig(`${path}.api`, 'is required (or the legacy "type", e.g. "sensor")', subtype);
  }
  const namespace = value.namespace === undefined || value.namespace === '' ? 'rdk' : value.namespace;
  if (typeof namespace !== 'string' || !isValidSegment(namespace)) {
    throw invalidConfig(`${path}.namespace`, 'must be [A-Za-z0-9_-]', namespace);
  }
  return createApi(namespace, isService ? serviceType : componentType, subtype);
}

function parseDependsOn(value: JsonValue | undefined, path: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidConfig(path, 'must be an array of resource names', value);
  return value.map((entry, index) => {
    if (typeof entry !== 'string' || entry === '') {
      throw invalidConfig(`${path}[${index}]`, 'must be a non-empty resource name', entry);
    }
    return entry;
  });
}

function parseServiceConfigs(value: JsonValue | undefined, path: string): AssociatedConfig[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidConfig(path, 'must be an array of {type, attributes}', value);
  return value.map((entry, index) => {
    if (!isJsonObject(entry)) throw invalidConfig(`${path}[${index}]`, 'must be an object', entry);
    if (typeof entry.type !== 'string' || entry.type === '') {
      throw invalidConfig(`${path}[${index}].type`, 'is required (e.g. "data_manager")', entry.type);
    }
    return {
      type: entry.type,
      attributes: parseAttributes(entry.attributes, `${path}[${index}].attributes`),
    };
  });
}

function parseAttributes(value: JsonValue | undefined, path: string): JsonObject {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object', value);
  return value;
}

function parseLogConfiguration(value: JsonValue | undefined, path: string): LogLevel | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value)) throw invalidConfig(path, 'must be an object {level}', value);
  if (value.level === undefined || value.level === '') return undefined;
  const level = parseLogLevel(value.level);
  if (!level) throw invalidConfig(`${path}.level`, 'must be one of debug, info, warn, error', value.level);
  return level;
}

function missing(path: string): never {
  throw invalidConfig(path, 'is required');
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
