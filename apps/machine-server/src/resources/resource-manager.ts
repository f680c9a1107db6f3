/**
 * The resource graph and the reconfigure algorithm (machine-runtime.md A2.2–A2.5).
 *
 * `apply` takes the configured components/services with their diff: removed resources are closed
 * (their dependents first, which then wait for the dependency), modified ones are marked for rebuild,
 * added ones get nodes, duplicate names mark every holder unhealthy. `completePass` then validates,
 * resolves dependencies, sorts nodes into levels and builds every node needing work level by level,
 * at most `concurrency` (10) at a time; a successful build marks the node's dependents for rebuild.
 * Failures (unknown model, validation, cycle, unresolved dependency, build error or timeout) make only
 * that node UNHEALTHY with a reason; the machine-server re-runs `completePass` every 5 s while
 * `needsWork()`. `closeAll` closes dependents first, each with a 30 s deadline.
 */
import type { Clock } from '../clock.ts';
import { forEachBounded, withDeadline } from '../concurrency.ts';
import type { CategoryDiff } from '../config/config-diff.ts';
import { errorMessage, MachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { ResourceLookup, ResourceState, ResourceStatus } from '../machine-host.ts';
import { createDependencies } from './dependencies.ts';
import { dependencyLevels, dependentsOf, resolveDependency } from './dependency-order.ts';
import { type ModelRegistry, unknownModelError, type ValidatedDependencies } from './model-registry.ts';
import { isActuator, type Resource } from './resource.ts';
import type { ResourceConfig } from './resource-config.ts';
import { type Api, apiEquals, formatResourceName, type ResourceName, shortName } from './resource-name.ts';

export interface ResourceManagerOptions {
  readonly registry: ModelRegistry;
  /** `rdk.resource_manager`. */
  readonly logger: Logger;
  readonly clock: Clock;
  /** Logger for one resource; default `logger.child(<full name>)`. ms-logging applies log levels. */
  readonly resourceLogger?: (config: ResourceConfig) => Logger;
  readonly buildTimeoutMs?: number;
  readonly closeTimeoutMs?: number;
  readonly validateTimeoutMs?: number;
  readonly concurrency?: number;
}

export interface PassReport {
  readonly built: string[];
  readonly failed: { key: string; error: string }[];
  readonly durationMs: number;
}

export interface ResourceManager {
  readonly lookup: ResourceLookup;
  /** Applies a new set of resource configs (see file comment); closes removed ones. */
  apply(
    configs: readonly ResourceConfig[],
    diff: CategoryDiff<ResourceConfig>,
    revision: string,
    signal: AbortSignal,
  ): Promise<void>;
  /** Builds everything that needs it, level by level. */
  completePass(signal: AbortSignal): Promise<PassReport>;
  /** True while some node is not ready or is marked for rebuild (the 5 s retry loop runs then). */
  needsWork(): boolean;
  /** Marks resources (and so their dependents) for rebuild, e.g. after their module restarted. */
  markForRebuild(names: readonly ResourceName[]): void;
  /** Marks every resource served by `model`-less registrations for rebuild (after a registry change). */
  markModelChanged(api: Api, model: { namespace: string; family: string; name: string }): void;
  statuses(): ResourceStatus[];
  /** Calls stop on every ready actuator. */
  stopAll(signal: AbortSignal): Promise<void>;
  /** Closes every resource, dependents first; returns the keys in close order. */
  closeAll(signal: AbortSignal): Promise<string[]>;
}

interface Node {
  readonly key: string;
  readonly name: ResourceName;
  config: ResourceConfig;
  state: ResourceState;
  resource: Resource | undefined;
  error: string | undefined;
  revision: string;
  lastUpdated: Date;
  needsBuild: boolean;
  /** Set when the config lists this name more than once; never built while set. */
  duplicateError: string | undefined;
  validated: { config: ResourceConfig; deps: ValidatedDependencies } | undefined;
  /** Resolved edges of the last pass. */
  required: string[];
  optional: string[];
  weak: string[];
  /** Optional + weak dependencies that were ready when the resource was built. */
  builtWith: string;
}

export function createResourceManager(options: ResourceManagerOptions): ResourceManager {
  const { registry, logger, clock } = options;
  const buildTimeoutMs = options.buildTimeoutMs ?? 120_000;
  const closeTimeoutMs = options.closeTimeoutMs ?? 30_000;
  const validateTimeoutMs = options.validateTimeoutMs ?? 5_000;
  const concurrency = options.concurrency ?? 10;
  const resourceLogger =
    options.resourceLogger ?? ((config) => logger.child(formatResourceName(config.resourceName)));
  const nodes = new Map<string, Node>();
  let currentRevision = '';

  const setState = (node: Node, state: ResourceState, error?: string) => {
    node.state = state;
    node.error = error;
    node.lastUpdated = clock.now();
  };

  const closeResource = async (node: Node, signal: AbortSignal): Promise<void> => {
    const resource = node.resource;
    if (!resource) return;
    node.resource = undefined;
    const result = await withDeadline(closeTimeoutMs, signal, (deadline) => resource.close(deadline));
    if (result.kind === 'failed') {
      logger.warn('error closing resource', { resource: node.key, error: errorMessage(result.error) });
    } else if (result.kind === 'timeout') {
      logger.warn('resource did not close within the deadline', {
        resource: node.key,
        deadline_ms: closeTimeoutMs,
      });
    }
  };

  const edgesOf = (node: Node) => [...node.required, ...node.optional, ...node.weak];
  const edgeMap = () => new Map([...nodes.values()].map((node) => [node.key, edgesOf(node)]));

  /** Close `keys` dependents-first (reverse levels), each level concurrently. */
  const closeInOrder = async (
    keys: Set<string>,
    signal: AbortSignal,
    state: ResourceState,
  ): Promise<string[]> => {
    const edges = new Map(
      [...keys].map((key) => [
        key,
        (nodes.get(key) ? edgesOf(nodes.get(key) as Node) : []).filter((dep) => keys.has(dep)),
      ]),
    );
    const { levels, cycles } = dependencyLevels(edges);
    const order = [...levels.reverse(), [...cycles.keys()]];
    const closed: string[] = [];
    for (const level of order) {
      await forEachBounded(level, concurrency, async (key) => {
        const node = nodes.get(key);
        if (!node) return;
        if (node.resource) closed.push(key);
        setState(node, state === 'removing' ? 'removing' : node.state);
        await closeResource(node, signal);
        if (state !== 'removing') setState(node, state, node.error);
      });
    }
    return closed;
  };

  const validate = async (node: Node, signal: AbortSignal): Promise<ValidatedDependencies> => {
    if (node.validated?.config === node.config) return node.validated.deps;
    const registration = registry.lookup(node.config.api, node.config.model);
    if (!registration) throw unknownModelError(node.config, registry.missingModelHint?.());
    const deps = registration.validate
      ? await withDeadline(validateTimeoutMs, signal, async (s) => registration.validate?.(node.config, s))
      : ({ kind: 'done', value: undefined } as const);
    if (deps.kind === 'failed') throw deps.error;
    if (deps.kind === 'timeout')
      throw new MachineError('DeadlineExceeded', `config validation timed out after ${validateTimeoutMs} ms`);
    const value = deps.value ?? { requiredDeps: [], optionalDeps: [] };
    node.validated = { config: node.config, deps: value };
    return value;
  };

  /** Resolves a node's edges; returns an error message when resolution fails. */
  const resolve = (node: Node, deps: ValidatedDependencies): string | undefined => {
    const required = new Set<string>();
    const missing: string[] = [];
    for (const reference of new Set([...node.config.dependsOn, ...deps.requiredDeps])) {
      const result = resolveDependency(reference, nodes.values(), node.key);
      if (result.kind === 'error') return result.message;
      if (result.kind === 'unresolved') missing.push(reference);
      else required.add(result.key);
    }
    node.required = [...required];
    node.optional = [];
    for (const reference of deps.optionalDeps) {
      const result = resolveDependency(reference, nodes.values(), node.key);
      if (result.kind === 'resolved' && !required.has(result.key)) node.optional.push(result.key);
    }
    if (missing.length > 0) {
      return `resource has unresolved dependencies not found in machine config: ${missing.join(', ')}`;
    }
    return undefined;
  };

  const weakMatches = (node: Node): string[] => {
    const registration = registry.lookup(node.config.api, node.config.model);
    const matchers = registration?.weakDependencies ?? [];
    if (matchers.length === 0) return [];
    const strongEdges = new Map([...nodes.values()].map((n) => [n.key, [...n.required, ...n.optional]]));
    const dependsOnMe = dependentsOf([node.key], strongEdges);
    return [...nodes.values()]
      .filter(
        (other) =>
          other.key !== node.key && !dependsOnMe.has(other.key) && matchers.some((m) => m(other.name)),
      )
      .map((other) => other.key);
  };

  const readyKeys = (keys: readonly string[]) =>
    keys
      .filter((key) => nodes.get(key)?.state === 'ready')
      .sort()
      .join(',');

  const build = async (node: Node, signal: AbortSignal, report: PassReport): Promise<void> => {
    const fail = (error: string) => {
      setState(node, 'unhealthy', error);
      report.failed.push({ key: node.key, error });
      logger.warn('resource build error', { resource: node.key, error });
    };
    const notReady = node.required.filter((key) => nodes.get(key)?.state !== 'ready');
    if (notReady.length > 0) {
      await closeResource(node, signal);
      const reason = `waiting for dependencies that are not ready: ${notReady.join(', ')}`;
      if (node.error !== reason)
        logger.info('resource waits for its dependencies', { resource: node.key, reason });
      setState(node, 'unhealthy', reason);
      return;
    }
    const registration = registry.lookup(node.config.api, node.config.model);
    if (!registration) {
      await closeResource(node, signal);
      return fail(unknownModelError(node.config, registry.missingModelHint?.()).message);
    }
    setState(node, 'configuring');
    await closeResource(node, signal);
    const depResources = [...node.required, ...node.optional, ...node.weak]
      .map((key) => nodes.get(key))
      .filter((dep): dep is Node => dep?.state === 'ready' && dep.resource !== undefined)
      .map((dep) => dep.resource as Resource);
    const config = node.config;
    const result = await withDeadline(
      buildTimeoutMs,
      signal,
      (deadline) =>
        registration.build({
          config,
          dependencies: createDependencies(depResources),
          logger: resourceLogger(config),
          signal: deadline,
        }),
      (late) => {
        void late.close(AbortSignal.timeout(closeTimeoutMs)).catch(() => {});
      },
    );
    if (result.kind === 'timeout') {
      node.needsBuild = true;
      return fail(`resource build timed out after ${buildTimeoutMs} ms`);
    }
    if (result.kind === 'failed') {
      node.needsBuild = false;
      return fail(`resource build error: ${errorMessage(result.error)}`);
    }
    if (node.config !== config || !nodes.has(node.key)) {
      void result.value.close(AbortSignal.timeout(closeTimeoutMs)).catch(() => {});
      return;
    }
    node.resource = result.value;
    node.needsBuild = false;
    node.revision = currentRevision;
    node.builtWith = readyKeys([...node.optional, ...node.weak]);
    setState(node, 'ready');
    report.built.push(node.key);
    logger.debug('resource built', { resource: node.key, revision: currentRevision });
    for (const other of nodes.values()) {
      if (other.key !== node.key && other.state === 'ready' && edgesOf(other).includes(node.key))
        other.needsBuild = true;
    }
  };

  const needsWork = (node: Node) =>
    node.duplicateError === undefined && (node.needsBuild || node.state !== 'ready');

  const completePass = async (signal: AbortSignal): Promise<PassReport> => {
    const started = performance.now();
    const report = { built: [] as string[], failed: [] as { key: string; error: string }[], durationMs: 0 };
    const blocked = new Map<string, string>();
    for (const node of nodes.values()) {
      if (node.duplicateError !== undefined) continue;
      try {
        const deps =
          needsWork(node) || !node.validated
            ? await validate(node, signal)
            : (node.validated?.deps as ValidatedDependencies);
        const problem = resolve(node, deps);
        if (problem) blocked.set(node.key, problem);
      } catch (error) {
        node.required = [...node.config.dependsOn].flatMap((reference) => {
          const r = resolveDependency(reference, nodes.values(), node.key);
          return r.kind === 'resolved' ? [r.key] : [];
        });
        node.optional = [];
        blocked.set(node.key, errorMessage(error));
      }
    }
    for (const node of nodes.values()) node.weak = node.duplicateError === undefined ? weakMatches(node) : [];
    for (const node of nodes.values()) {
      if (
        node.state === 'ready' &&
        !node.needsBuild &&
        readyKeys([...node.optional, ...node.weak]) !== node.builtWith
      ) {
        node.needsBuild = true;
      }
    }
    const { levels, cycles } = dependencyLevels(edgeMap());
    for (const [key, description] of cycles) blocked.set(key, description);
    for (const [key, reason] of blocked) {
      const node = nodes.get(key) as Node;
      if (node.state === 'unhealthy' && node.error === reason && !node.resource) continue;
      await closeResource(node, signal);
      setState(node, 'unhealthy', reason);
      report.failed.push({ key, error: reason });
      logger.warn('resource cannot be built', { resource: key, reason });
    }
    for (const level of levels) {
      if (signal.aborted) break;
      const work = level.filter((key) => !blocked.has(key) && needsWork(nodes.get(key) as Node));
      await forEachBounded(work, concurrency, async (key) => {
        const node = nodes.get(key);
        if (node) await build(node, signal, report);
      });
    }
    report.durationMs = performance.now() - started;
    return report;
  };

  const apply: ResourceManager['apply'] = async (configs, diff, revision, signal) => {
    currentRevision = revision;
    const counts = new Map<string, ResourceConfig[]>();
    for (const config of configs) {
      const key = formatResourceName(config.resourceName);
      counts.set(key, [...(counts.get(key) ?? []), config]);
    }
    const removed = new Set([...nodes.keys()].filter((key) => !counts.has(key)));
    const edges = edgeMap();
    const dependents = [...dependentsOf(removed, edges)].filter((key) => !removed.has(key));
    await closeInOrder(new Set(dependents), signal, 'unconfigured');
    for (const key of dependents) {
      const node = nodes.get(key) as Node;
      node.needsBuild = true;
    }
    await closeInOrder(removed, signal, 'removing');
    for (const key of removed) nodes.delete(key);

    const modified = new Set(diff.modified.map((config) => formatResourceName(config.resourceName)));
    for (const [key, entries] of counts) {
      const config = entries[entries.length - 1] as ResourceConfig;
      let node = nodes.get(key);
      if (!node) {
        node = {
          key,
          name: config.resourceName,
          config,
          state: 'unconfigured',
          resource: undefined,
          error: undefined,
          revision: '',
          lastUpdated: clock.now(),
          needsBuild: true,
          duplicateError: undefined,
          validated: undefined,
          required: [],
          optional: [],
          weak: [],
          builtWith: '',
        };
        nodes.set(key, node);
      } else if (modified.has(key) || node.duplicateError !== undefined) {
        node.config = config;
        node.needsBuild = true;
        node.validated = undefined;
      } else if (node.state === 'ready') {
        node.revision = revision;
      }
      if (entries.length > 1) {
        const where = entries.map((entry) => entry.path).join(' and ');
        node.duplicateError = `duplicate resource name ${key} (${where}); neither resource will be reachable`;
        await closeResource(node, signal);
        setState(node, 'unhealthy', node.duplicateError);
        logger.error('Cannot add duplicate local resource', { resource: key, paths: where });
      } else if (node.duplicateError !== undefined) {
        node.duplicateError = undefined;
        setState(node, 'unconfigured');
      }
    }
  };

  const readyNodes = () => [...nodes.values()].filter((node) => node.state === 'ready' && node.resource);

  const lookup: ResourceLookup = {
    names: () => readyNodes().map((node) => node.name),
    get: (name) => {
      const node = nodes.get(formatResourceName(name));
      return node?.state === 'ready' ? node.resource : undefined;
    },
    findByShortName(api, name) {
      const matches = readyNodes().filter(
        (node) => apiEquals(node.name.api, api) && (shortName(node.name) === name || node.name.name === name),
      );
      if (matches.length === 0) {
        const known = [...nodes.values()].find(
          (node) => apiEquals(node.name.api, api) && shortName(node.name) === name,
        );
        throw new MachineError(
          'NotFound',
          known
            ? `resource ${known.key} is not available: ${known.error ?? known.state}`
            : `resource ${JSON.stringify(name)} of API ${api.namespace}:${api.type}:${api.subtype} not found`,
        );
      }
      if (matches.length > 1) {
        throw new MachineError(
          'FailedPrecondition',
          `resource name ${JSON.stringify(name)} is ambiguous: ${matches.map((m) => m.key).join(', ')}`,
        );
      }
      return (matches[0] as Node).resource as Resource;
    },
  };

  return {
    lookup,
    apply,
    completePass,
    needsWork: () => [...nodes.values()].some(needsWork),
    markForRebuild(names) {
      for (const name of names) {
        const node = nodes.get(formatResourceName(name));
        if (node) node.needsBuild = true;
      }
    },
    markModelChanged(api, model) {
      for (const node of nodes.values()) {
        const m = node.config.model;
        if (
          apiEquals(node.config.api, api) &&
          m.namespace === model.namespace &&
          m.family === model.family &&
          m.name === model.name
        ) {
          node.needsBuild = true;
          node.validated = undefined;
        }
      }
    },
    statuses: () =>
      [...nodes.values()].map((node) => ({
        name: node.name,
        state: node.state,
        lastUpdated: node.lastUpdated,
        revision: node.revision,
        ...(node.error === undefined ? {} : { error: node.error }),
      })),
    async stopAll(signal) {
      await forEachBounded(readyNodes(), concurrency, async (node) => {
        const resource = node.resource;
        if (!resource || !isActuator(resource)) return;
        try {
          await resource.stop({ signal });
        } catch (error) {
          logger.warn('StopAll: stop failed', { resource: node.key, error: errorMessage(error) });
        }
      });
    },
    async closeAll(signal) {
      const order = await closeInOrder(new Set(nodes.keys()), signal, 'removing');
      nodes.clear();
      return order;
    },
  };
}
