/**
 * Registrations of (API, model) → how to validate and build a resource (machine-runtime.md A2.2).
 * Built-in models register at start-up; modules (ms-modules) register the models of a module when it
 * becomes ready and unregister them when it stops. Listeners hear about every change so the resource
 * graph can rebuild resources whose model just appeared or disappeared.
 */
import { invalidConfig, MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import type { Logger } from '../logging/logger.ts';
import type { Dependencies } from './dependencies.ts';
import type { Resource } from './resource.ts';
import type { ResourceConfig } from './resource-config.ts';
import { type Api, formatApi, formatModel, type Model, type ResourceName } from './resource-name.ts';

/** Implicit dependencies found by validation: short names or full resource names. */
export interface ValidatedDependencies {
  readonly requiredDeps: readonly string[];
  readonly optionalDeps: readonly string[];
}

export const noDependencies: ValidatedDependencies = { requiredDeps: [], optionalDeps: [] };

export interface BuildContext {
  readonly config: ResourceConfig;
  readonly dependencies: Dependencies;
  /** `rdk.resource_manager.<full resource name>`, honouring the resource's log_configuration. */
  readonly logger: Logger;
  /** Aborted when the build times out (2 min) or the machine shuts down. */
  readonly signal: AbortSignal;
}

/** Decides whether a resource is a weak dependency (e.g. data manager: every component). */
export type WeakDependencyMatcher = (name: ResourceName) => boolean;

export interface ModelRegistration {
  readonly api: Api;
  readonly model: Model;
  /** JSON Schema of `attributes`, written by `-dump-resources`. */
  readonly attributeSchema?: JsonObject;
  /**
   * Checks `config.attributes`; throws a MachineError whose message starts with the field path
   * (use `invalidConfig(`${config.path}.attributes.x`, ...)`). Returns implicit dependencies.
   * Modular models answer via the module's ValidateConfig RPC (5 s, bounded by `signal`).
   */
  validate?(
    config: ResourceConfig,
    signal: AbortSignal,
  ): ValidatedDependencies | Promise<ValidatedDependencies>;
  build(context: BuildContext): Promise<Resource>;
  readonly weakDependencies?: readonly WeakDependencyMatcher[];
  /** `builtin`, or the name of the module that serves the model. */
  readonly source: string;
}

export type RegistryChange = { kind: 'registered' | 'unregistered'; registration: ModelRegistration };

export interface ModelRegistry {
  /** Adds a registration; throws AlreadyExists if (api, model) is taken. Returns its unregister function. */
  register(registration: ModelRegistration): () => void;
  unregister(api: Api, model: Model): boolean;
  lookup(api: Api, model: Model): ModelRegistration | undefined;
  /** Sorted by API then model (the `-dump-resources` order). */
  list(): ModelRegistration[];
  /** Called after every register/unregister; returns a function removing the listener. */
  onChange(listener: (change: RegistryChange) => void): () => void;
  /**
   * Why some models may be missing right now (ms-modules: the modules that are not running and why);
   * appended to the unknown-model reason of a resource.
   */
  missingModelHint?(): string | undefined;
  /** Sets the source of `missingModelHint` (the module manager). */
  setMissingModelHint?(hint: () => string | undefined): void;
}

export function registrationKey(api: Api, model: Model): string {
  return `${formatApi(api)}|${formatModel(model)}`;
}

export function createModelRegistry(): ModelRegistry {
  const registrations = new Map<string, ModelRegistration>();
  const listeners = new Set<(change: RegistryChange) => void>();
  let hint: () => string | undefined = () => undefined;
  const notify = (change: RegistryChange) => {
    for (const listener of listeners) listener(change);
  };
  const unregister = (api: Api, model: Model): boolean => {
    const key = registrationKey(api, model);
    const registration = registrations.get(key);
    if (!registration) return false;
    registrations.delete(key);
    notify({ kind: 'unregistered', registration });
    return true;
  };
  return {
    register(registration) {
      const key = registrationKey(registration.api, registration.model);
      const existing = registrations.get(key);
      if (existing) {
        throw new MachineError(
          'AlreadyExists',
          `model ${formatModel(registration.model)} of API ${formatApi(registration.api)} is already registered by ${existing.source}`,
        );
      }
      registrations.set(key, registration);
      notify({ kind: 'registered', registration });
      return () => {
        if (registrations.get(key) === registration) unregister(registration.api, registration.model);
      };
    },
    unregister,
    lookup: (api, model) => registrations.get(registrationKey(api, model)),
    list: () =>
      [...registrations.values()].sort(
        (a, b) =>
          formatApi(a.api).localeCompare(formatApi(b.api)) ||
          formatModel(a.model).localeCompare(formatModel(b.model)),
      ),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    missingModelHint: () => hint(),
    setMissingModelHint(source) {
      hint = source;
    },
  };
}

/** The error a resource gets when no registration serves its (api, model). */
export function unknownModelError(config: ResourceConfig, hint?: string): MachineError {
  return invalidConfig(
    `${config.path}.model`,
    `unknown model ${formatModel(config.model)} for API ${formatApi(config.api)} (not built in and not served by any running module${hint ? `; ${hint}` : ''})`,
  );
}
