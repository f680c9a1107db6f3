/**
 * Pure graph helpers for the reconfigure algorithm (machine-runtime.md A2.2–A2.5): dependency
 * resolution by full or short name, cycle detection and the levels resources are built in (level k
 * depends only on levels < k). Shutdown walks the levels backwards (dependents first).
 */
import { isFullResourceName, type ResourceName, shortName } from './resource-name.ts';

export type DependencyResolution =
  | { kind: 'resolved'; key: string }
  | { kind: 'unresolved' }
  | { kind: 'error'; message: string };

export interface NamedNode {
  readonly key: string;
  readonly name: ResourceName;
}

/**
 * Resolves one dependency reference of `selfKey`: a full name resolves directly, a short name by
 * searching every node's short name and simple name (0 → unresolved, >1 → conflicting names).
 */
export function resolveDependency(
  reference: string,
  nodes: Iterable<NamedNode>,
  selfKey: string,
): DependencyResolution {
  const candidates: string[] = [];
  const full = isFullResourceName(reference);
  for (const node of nodes) {
    const matches = full
      ? node.key === reference
      : shortName(node.name) === reference || node.name.name === reference;
    if (matches) candidates.push(node.key);
  }
  if (candidates.length === 0) return { kind: 'unresolved' };
  if (candidates.length > 1) {
    return {
      kind: 'error',
      message: `conflicting names for dependency ${JSON.stringify(reference)}: ${candidates.join(', ')}`,
    };
  }
  if (candidates[0] === selfKey)
    return { kind: 'error', message: `resource cannot depend on itself (${reference})` };
  return { kind: 'resolved', key: candidates[0] as string };
}

export interface DependencyLevels {
  /** Levels in build order; nodes in cycles are excluded. */
  readonly levels: string[][];
  /** Node key → the cycle it belongs to (`a -> b -> a`). */
  readonly cycles: Map<string, string>;
}

/**
 * Levels of a dependency graph given as key → keys it depends on (unknown keys ignored).
 * Nodes on a cycle are reported in `cycles`; nodes that merely depend on a cycle keep a level
 * (they will wait for their dependency like any other unready one).
 */
export function dependencyLevels(edges: ReadonlyMap<string, readonly string[]>): DependencyLevels {
  const cycles = findCycles(edges);
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const levelOf = (key: string): number => {
    const known = level.get(key);
    if (known !== undefined) return known;
    visiting.add(key);
    let result = 0;
    for (const dep of edges.get(key) ?? []) {
      if (!edges.has(dep) || cycles.has(dep) || visiting.has(dep)) continue;
      result = Math.max(result, levelOf(dep) + 1);
    }
    visiting.delete(key);
    level.set(key, result);
    return result;
  };
  const levels: string[][] = [];
  for (const key of [...edges.keys()].sort()) {
    if (cycles.has(key)) continue;
    const index = levelOf(key);
    while (levels.length <= index) levels.push([]);
    levels[index]?.push(key);
  }
  return { levels, cycles };
}

/** Tarjan's strongly connected components; every node on a cycle (or self-loop) maps to a description. */
function findCycles(edges: ReadonlyMap<string, readonly string[]>): Map<string, string> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles = new Map<string, string>();
  let counter = 0;
  const connect = (key: string) => {
    index.set(key, counter);
    low.set(key, counter);
    counter++;
    stack.push(key);
    onStack.add(key);
    for (const dep of edges.get(key) ?? []) {
      if (!edges.has(dep)) continue;
      if (!index.has(dep)) {
        connect(dep);
        low.set(key, Math.min(low.get(key) as number, low.get(dep) as number));
      } else if (onStack.has(dep)) {
        low.set(key, Math.min(low.get(key) as number, index.get(dep) as number));
      }
    }
    if (low.get(key) !== index.get(key)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== key);
    const selfLoop = component.length === 1 && (edges.get(key) ?? []).includes(key);
    if (component.length > 1 || selfLoop) {
      const ordered = component.sort();
      const description = `dependency cycle: ${[...ordered, ordered[0]].join(' -> ')}`;
      for (const node of ordered) cycles.set(node, description);
    }
  };
  for (const key of edges.keys()) if (!index.has(key)) connect(key);
  return cycles;
}

/** Every node that (transitively) depends on one of `roots` (roots excluded). */
export function dependentsOf(
  roots: Iterable<string>,
  edges: ReadonlyMap<string, readonly string[]>,
): Set<string> {
  const reverse = new Map<string, string[]>();
  for (const [key, deps] of edges) {
    for (const dep of deps) {
      const list = reverse.get(dep) ?? [];
      list.push(key);
      reverse.set(dep, list);
    }
  }
  const result = new Set<string>();
  const queue = [...roots];
  const rootSet = new Set(queue);
  while (queue.length > 0) {
    const key = queue.pop() as string;
    for (const dependent of reverse.get(key) ?? []) {
      if (result.has(dependent) || rootSet.has(dependent)) continue;
      result.add(dependent);
      queue.push(dependent);
    }
  }
  return result;
}
