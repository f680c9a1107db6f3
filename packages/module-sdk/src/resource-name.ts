/**
 * API triples (`rdk:component:sensor`), model triples (`acme:demo:counter`) and full resource names
 * (`rdk:component:sensor/s1`, `rdk:component:sensor/remote:s1`) as the module protocol carries them.
 */
import { ModuleError } from './errors.ts';

export interface Api {
  readonly namespace: string;
  readonly type: string;
  readonly subtype: string;
}

export interface ResourceName {
  readonly api: Api;
  /** Short name: `name`, or `remote:name` behind remotes. */
  readonly name: string;
}

const segment = /^[\w-]+$/;

export function parseApi(text: string, field = 'api'): Api {
  const parts = text.split(':');
  if (parts.length !== 3 || !parts.every((part) => segment.test(part))) {
    throw new ModuleError(
      'InvalidArgument',
      `${field}: must be namespace:type:subtype (got ${JSON.stringify(text)})`,
    );
  }
  return { namespace: parts[0] as string, type: parts[1] as string, subtype: parts[2] as string };
}

export function formatApi(api: Api): string {
  return `${api.namespace}:${api.type}:${api.subtype}`;
}

/** Checks a model triple `namespace:family:name`; returns it. */
export function checkModel(text: string, field = 'model'): string {
  const parts = text.split(':');
  if (parts.length !== 3 || !parts.every((part) => segment.test(part))) {
    throw new ModuleError(
      'InvalidArgument',
      `${field}: must be namespace:family:name (got ${JSON.stringify(text)})`,
    );
  }
  return text;
}

export function parseResourceName(text: string, field = 'name'): ResourceName {
  const slash = text.indexOf('/');
  const name = text.slice(slash + 1);
  if (slash < 0 || name === '' || !name.split(':').every((part) => segment.test(part))) {
    throw new ModuleError(
      'InvalidArgument',
      `${field}: must be a full resource name api/name (got ${JSON.stringify(text)})`,
    );
  }
  return { api: parseApi(text.slice(0, slash), field), name };
}

export function formatResourceName(name: ResourceName): string {
  return `${formatApi(name.api)}/${name.name}`;
}

export function apiEquals(a: Api, b: Api): boolean {
  return formatApi(a) === formatApi(b);
}
