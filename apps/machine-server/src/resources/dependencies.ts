/**
 * The resources handed to a constructor: its required dependencies (explicit `depends_on` + implicit
 * from validation), the optional ones that exist and are healthy, and the weak ones its registration
 * matches. Keys are full resource names (`rdk:component:sensor/s1`).
 */
import { MachineError } from '../errors.ts';
import type { Resource } from './resource.ts';
import { type Api, apiEquals, formatResourceName, type ResourceName, shortName } from './resource-name.ts';

export interface Dependencies {
  /** Every dependency by full resource name. */
  readonly all: ReadonlyMap<string, Resource>;
  /** The dependency of `api` whose short name is `name`; throws NotFound if absent. */
  get<T extends Resource = Resource>(api: Api, name: string): T;
  /** Same, undefined when absent (optional dependencies). */
  find<T extends Resource = Resource>(api: Api, name: string): T | undefined;
}

export function createDependencies(resources: Iterable<Resource>): Dependencies {
  const all = new Map<string, Resource>();
  for (const resource of resources) all.set(formatResourceName(resource.name), resource);
  const find = <T extends Resource>(api: Api, name: string): T | undefined => {
    for (const resource of all.values()) {
      if (
        apiEquals(resource.name.api, api) &&
        (shortName(resource.name) === name || resource.name.name === name)
      ) {
        return resource as T;
      }
    }
    return undefined;
  };
  return {
    all,
    find,
    get<T extends Resource>(api: Api, name: string): T {
      const found = find<T>(api, name);
      if (!found) {
        throw new MachineError(
          'NotFound',
          `dependency ${JSON.stringify(name)} of API ${formatApiShort(api)} not found`,
        );
      }
      return found;
    },
  };
}

function formatApiShort(api: Api): string {
  return `${api.namespace}:${api.type}:${api.subtype}`;
}

/** Helper for tests and built-ins: the names of a dependency set. */
export function dependencyNames(dependencies: Dependencies): ResourceName[] {
  return [...dependencies.all.values()].map((resource) => resource.name);
}
