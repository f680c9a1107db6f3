/**
 * Resource names, APIs and models (machine-runtime.md A2.1).
 *
 * - API triple `namespace:type:subtype`, e.g. `rdk:component:sensor`, `rdk:service:data_manager`.
 * - Model triple `namespace:family:name`; a bare name `fake` means `rdk:builtin:fake`.
 * - Full resource name `<api>/<name>`; with remotes `<api>/<remote1>:<remote2>:<name>`.
 *   The short name is `remote1:remote2:name` (just `name` for local resources).
 *
 * Every parser throws a MachineError (InvalidArgument) naming the field path it was given.
 */
import { invalidConfig } from '../errors.ts';

export interface Api {
  readonly namespace: string;
  /** `component` or `service` (others are allowed by the grammar, e.g. `rdk-internal` services). */
  readonly type: string;
  readonly subtype: string;
}

export interface Model {
  readonly namespace: string;
  readonly family: string;
  readonly name: string;
}

export interface ResourceName {
  readonly api: Api;
  /** Remote chain, outermost first; empty for local resources. */
  readonly remotePath: readonly string[];
  readonly name: string;
}

const segment = /^[\w-]+$/;
const fullNamePattern = /^([\w-]+:[\w-]+:[\w-]+)\/(.+)$/;

export const componentType = 'component';
export const serviceType = 'service';

export function isValidSegment(value: string): boolean {
  return segment.test(value);
}

export function createApi(namespace: string, type: string, subtype: string): Api {
  return { namespace, type, subtype };
}

/** `rdk:component:<subtype>` */
export function componentApi(subtype: string): Api {
  return createApi('rdk', componentType, subtype);
}

/** `rdk:service:<subtype>` */
export function serviceApi(subtype: string): Api {
  return createApi('rdk', serviceType, subtype);
}

export function formatApi(api: Api): string {
  return `${api.namespace}:${api.type}:${api.subtype}`;
}

/** Parses a full API triple; `path` names the config field for the error message. */
export function parseApi(text: string, path = 'api'): Api {
  const parts = text.split(':');
  if (parts.length !== 3 || !parts.every((part) => segment.test(part))) {
    throw invalidConfig(path, 'must be an API triple namespace:type:subtype of [A-Za-z0-9_-]', text);
  }
  return createApi(parts[0] as string, parts[1] as string, parts[2] as string);
}

export function apiEquals(a: Api, b: Api): boolean {
  return a.namespace === b.namespace && a.type === b.type && a.subtype === b.subtype;
}

export function createModel(namespace: string, family: string, name: string): Model {
  return { namespace, family, name };
}

/** `rdk:builtin:<name>` */
export function builtinModel(name: string): Model {
  return createModel('rdk', 'builtin', name);
}

export function formatModel(model: Model): string {
  return `${model.namespace}:${model.family}:${model.name}`;
}

/**
 * Parses a model: a triple `namespace:family:name`, a bare name (`fake` → `rdk:builtin:fake`), or the
 * object form `{namespace, model_family, name}`.
 */
export function parseModel(value: unknown, path = 'model'): Model {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    const parts = [record.namespace, record.model_family, record.name];
    if (!parts.every((part) => typeof part === 'string' && segment.test(part))) {
      throw invalidConfig(
        path,
        'model object needs namespace, model_family and name of [A-Za-z0-9_-]',
        value,
      );
    }
    return createModel(parts[0] as string, parts[1] as string, parts[2] as string);
  }
  if (typeof value !== 'string' || value === '') {
    throw invalidConfig(path, 'must be a model triple namespace:family:name or a bare model name', value);
  }
  const parts = value.split(':');
  if (parts.length === 1 && segment.test(value)) return builtinModel(value);
  if (parts.length !== 3 || !parts.every((part) => segment.test(part))) {
    throw invalidConfig(path, 'must be a model triple namespace:family:name or a bare model name', value);
  }
  return createModel(parts[0] as string, parts[1] as string, parts[2] as string);
}

export function modelEquals(a: Model, b: Model): boolean {
  return a.namespace === b.namespace && a.family === b.family && a.name === b.name;
}

/** A local resource name, or one behind remotes when `name` contains `:` (`remote1:remote2:name`). */
export function createResourceName(api: Api, name: string): ResourceName {
  const parts = name.split(':');
  const simple = parts.pop() as string;
  return { api, remotePath: parts, name: simple };
}

/** `remote1:remote2:name`, or `name` for a local resource. */
export function shortName(name: ResourceName): string {
  return [...name.remotePath, name.name].join(':');
}

/** `<api>/<short name>`, the canonical key of a resource everywhere in the machine-server. */
export function formatResourceName(name: ResourceName): string {
  return `${formatApi(name.api)}/${shortName(name)}`;
}

/** Parses a fully qualified name `<namespace:type:subtype>/<remote:…:name>`. */
export function parseResourceName(text: string, path = 'name'): ResourceName {
  const match = fullNamePattern.exec(text);
  if (!match) {
    throw invalidConfig(path, 'must be a full resource name namespace:type:subtype/name', text);
  }
  const api = parseApi(match[1] as string, path);
  const name = match[2] as string;
  if (!name.split(':').every((part) => segment.test(part))) {
    throw invalidConfig(path, 'resource name segments must be [A-Za-z0-9_-]', text);
  }
  return createResourceName(api, name);
}

export function isFullResourceName(text: string): boolean {
  return fullNamePattern.test(text);
}

export function resourceNameEquals(a: ResourceName, b: ResourceName): boolean {
  return formatResourceName(a) === formatResourceName(b);
}

/** Validates a configured resource `name` (may contain `:` for remote chains); returns it. */
export function checkResourceNameText(name: unknown, path: string): string {
  if (typeof name !== 'string' || name === '')
    throw invalidConfig(path, 'is required and must be a string', name);
  if (!name.split(':').every((part) => segment.test(part))) {
    throw invalidConfig(path, 'may only contain letters, digits, "_" and "-" (":" separates remotes)', name);
  }
  return name;
}
