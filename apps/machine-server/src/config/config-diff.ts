/**
 * The diff of two machine configs (machine-runtime.md A1.7). Categories are compared by key:
 * components/services by full resource name, remotes/packages/modules/jobs by `name`, processes by
 * `id`. Only-in-right → added, only-in-left → removed (left order), in both and different → modified
 * (right value). Config-file positions (`path`) and the cloud's module/package `status` are ignored.
 */
import type { JsonObject } from '../json.ts';
import type { ResourceConfig } from '../resources/resource-config.ts';
import { resourceConfigToJson } from '../resources/resource-config.ts';
import { formatResourceName } from '../resources/resource-name.ts';
import { deepEqual } from './deep-equal.ts';
import {
  allResourceConfigs,
  type MachineConfig,
  type ModuleConfig,
  type PackageConfig,
} from './machine-config.ts';

export interface CategoryDiff<T> {
  readonly added: readonly T[];
  readonly removed: readonly T[];
  readonly modified: readonly T[];
  readonly unmodified: readonly T[];
}

export interface ConfigDiff {
  readonly resources: CategoryDiff<ResourceConfig>;
  readonly modules: CategoryDiff<ModuleConfig>;
  readonly packages: CategoryDiff<PackageConfig>;
  readonly remotes: CategoryDiff<JsonObject>;
  readonly processes: CategoryDiff<JsonObject>;
  readonly jobs: CategoryDiff<JsonObject>;
  /** No difference in remotes, components, services, processes, packages or modules. */
  readonly resourcesEqual: boolean;
  /** Cloud section, network section, auth and enable_web_profile all equal. */
  readonly networkEqual: boolean;
  /** `log` patterns, `debug` and `disable_log_deduplication` equal. */
  readonly logEqual: boolean;
  readonly jobsEqual: boolean;
  readonly tracingEqual: boolean;
  readonly maintenanceEqual: boolean;
}

/** Diff from `left` (running; undefined at first start) to `right` (new). */
export function diffConfigs(left: MachineConfig | undefined, right: MachineConfig): ConfigDiff {
  const resources = diffCategory(
    left ? allResourceConfigs(left) : [],
    allResourceConfigs(right),
    (config) => formatResourceName(config.resourceName),
    (a, b) => deepEqual(resourceConfigToJson(a), resourceConfigToJson(b)),
  );
  const modules = diffCategory(left?.modules ?? [], right.modules, (m) => m.name, moduleEqual);
  const packages = diffCategory(left?.packages ?? [], right.packages, (p) => p.name, packageEqual);
  const remotes = diffCategory(left?.remotes ?? [], right.remotes, (r) => String(r.name), deepEqual);
  const processes = diffCategory(left?.processes ?? [], right.processes, (p) => String(p.id), deepEqual);
  const jobs = diffCategory(left?.jobs ?? [], right.jobs, (j) => String(j.name), deepEqual);
  const changed = (diff: CategoryDiff<unknown>) =>
    diff.added.length > 0 || diff.removed.length > 0 || diff.modified.length > 0;
  return {
    resources,
    modules,
    packages,
    remotes,
    processes,
    jobs,
    resourcesEqual: ![resources, modules, packages, remotes, processes].some(changed),
    networkEqual:
      left !== undefined &&
      deepEqual(left.cloud, right.cloud) &&
      deepEqual(left.network, right.network) &&
      deepEqual(left.auth, right.auth) &&
      left.enableWebProfile === right.enableWebProfile,
    logEqual:
      left !== undefined &&
      deepEqual(left.log, right.log) &&
      left.debug === right.debug &&
      left.disableLogDeduplication === right.disableLogDeduplication,
    jobsEqual: !changed(jobs),
    tracingEqual: deepEqual(left?.tracing, right.tracing),
    maintenanceEqual: deepEqual(left?.maintenance, right.maintenance),
  };
}

/** True when nothing at all changed (the poll delivered the same config). */
export function isEmptyDiff(diff: ConfigDiff): boolean {
  return (
    diff.resourcesEqual &&
    diff.networkEqual &&
    diff.logEqual &&
    diff.jobsEqual &&
    diff.tracingEqual &&
    diff.maintenanceEqual
  );
}

function diffCategory<T>(
  left: readonly T[],
  right: readonly T[],
  key: (item: T) => string,
  equal: (a: T, b: T) => boolean,
): CategoryDiff<T> {
  const leftByKey = new Map<string, T>();
  for (const item of left) if (!leftByKey.has(key(item))) leftByKey.set(key(item), item);
  const rightKeys = new Set(right.map(key));
  const added: T[] = [];
  const modified: T[] = [];
  const unmodified: T[] = [];
  const seen = new Set<string>();
  for (const item of right) {
    const k = key(item);
    if (seen.has(k)) continue;
    seen.add(k);
    const previous = leftByKey.get(k);
    if (previous === undefined) added.push(item);
    else if (equal(previous, item)) unmodified.push(item);
    else modified.push(item);
  }
  const removed = [...leftByKey.entries()].filter(([k]) => !rightKeys.has(k)).map(([, item]) => item);
  return { added, removed, modified, unmodified };
}

function moduleEqual(a: ModuleConfig, b: ModuleConfig): boolean {
  const { path: _a, statusError: _sa, ...left } = a;
  const { path: _b, statusError: _sb, ...right } = b;
  return deepEqual(left, right);
}

function packageEqual(a: PackageConfig, b: PackageConfig): boolean {
  const { statusError: _a, ...left } = a;
  const { statusError: _b, ...right } = b;
  return deepEqual(left, right);
}
