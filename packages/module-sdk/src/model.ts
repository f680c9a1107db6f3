/**
 * A model a module serves: its API, its model triple, an optional validator returning implicit
 * dependencies (answered through `ValidateConfig`), and a constructor (`AddResource`).
 */
import type { ApiDefinition } from './api-definition.ts';
import type { Logger } from './logger.ts';
import type { Dependencies, Resource, ResourceConfig } from './resource.ts';

export interface ValidationResult {
  /** Required implicit dependencies: short or full resource names. */
  readonly dependencies?: readonly string[];
  readonly optionalDependencies?: readonly string[];
}

export interface CreateContext {
  readonly config: ResourceConfig;
  readonly dependencies: Dependencies;
  /** `<module>.<full resource name>`, at the resource's log_configuration level when set. */
  readonly logger: Logger;
  /** Aborted when AddResource's deadline passes. */
  readonly signal: AbortSignal;
}

export interface ModelDefinition<T extends Resource = Resource> {
  readonly api: ApiDefinition<T>;
  /** `namespace:family:name`. */
  readonly model: string;
  /**
   * Checks `config.attributes`; throw ModuleError('InvalidArgument', '<field>: …') on a mistake.
   * Returns implicit dependencies.
   */
  validate?(config: ResourceConfig): ValidationResult | Promise<ValidationResult>;
  create(context: CreateContext): Promise<T>;
}

/** Keeps the resource type of `api` and `create` tied together at the definition site. */
export function defineModel<T extends Resource>(definition: ModelDefinition<T>): ModelDefinition {
  return definition as unknown as ModelDefinition;
}
