/**
 * Reconfiguration of a 200-resource graph where one resource changed (in process, real resource
 * manager, config parser and diff, built-in fake models).
 *
 *   node bench/machine-reconfigure.ts [--rounds 20] [--resources 200]
 *
 * The graph: `--resources` fake generics in 10 levels of 20; every resource of level k > 0 depends
 * on two resources of level k-1. Measured: the initial build of the whole graph; then, per round, a
 * change to the attributes of one leaf (nothing depends on it: 1 rebuild) and of one resource in the
 * middle level (it and its transitive dependents are rebuilt), each timed from the new config text to
 * the end of the pass (parse + validate + diff + apply + pass).
 */
import { parseArgs } from 'node:util';
import { registerBuiltinModels } from '../apps/machine-server/src/builtins/register-builtins.ts';
import { systemClock } from '../apps/machine-server/src/clock.ts';
import { diffConfigs } from '../apps/machine-server/src/config/config-diff.ts';
import { processConfigJson } from '../apps/machine-server/src/config/config-processing.ts';
import type { MachineConfig } from '../apps/machine-server/src/config/machine-config.ts';
import type { JsonObject } from '../apps/machine-server/src/json.ts';
import { createSilentLogger } from '../apps/machine-server/src/logging/logger.ts';
import { createModelRegistry } from '../apps/machine-server/src/resources/model-registry.ts';
import { createResourceManager } from '../apps/machine-server/src/resources/resource-manager.ts';
import { machineInfo, median, percentile, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '20' }, resources: { type: 'string', default: '200' } },
});
const rounds = Number(args.rounds);
const resourceCount = Number(args.resources);
const perLevel = 20;
const levels = Math.ceil(resourceCount / perLevel);

function graphConfig(changed: ReadonlyMap<number, number>): JsonObject {
  const components: JsonObject[] = [];
  for (let i = 0; i < resourceCount; i++) {
    const level = Math.floor(i / perLevel);
    const entry: JsonObject = { name: `r${i}`, api: 'rdk:component:generic', model: 'fake' };
    if (level > 0) {
      const base = (level - 1) * perLevel;
      entry.depends_on = [`r${base + (i % perLevel)}`, `r${base + ((i + 1) % perLevel)}`];
    }
    const value = changed.get(i);
    if (value !== undefined)
      entry.attributes = { build_delay_ms: 0, fail_while_file_exists: `/nonexistent/${value}` };
    components.push(entry);
  }
  return { components };
}

const registry = createModelRegistry();
registerBuiltinModels(registry, systemClock);
const manager = createResourceManager({ registry, logger: createSilentLogger(), clock: systemClock });
let current: MachineConfig | undefined;

async function applyText(text: string): Promise<{ ms: number; built: number }> {
  const started = performance.now();
  const next = processConfigJson(JSON.parse(text) as JsonObject, 'local', registry);
  const diff = diffConfigs(current, next);
  const signal = AbortSignal.timeout(60_000);
  await manager.apply(next.components, diff.resources, String(Math.random()), signal);
  const report = await manager.completePass(signal);
  current = next;
  if (report.failed.length > 0)
    throw new Error(`unexpected failures: ${JSON.stringify(report.failed.slice(0, 3))}`);
  return { ms: performance.now() - started, built: report.built.length };
}

const changes = new Map<number, number>();
const initial = await applyText(JSON.stringify(graphConfig(changes)));
console.log(`initial build of ${resourceCount}: ${round(initial.ms, 1)} ms (${initial.built} built)`);
const leaf: number[] = [];
const middle: number[] = [];
let leafBuilt = 0;
let middleBuilt = 0;
const middleIndex = Math.floor(levels / 2) * perLevel;
for (let i = 0; i < rounds; i++) {
  changes.set(resourceCount - 1, i);
  const a = await applyText(JSON.stringify(graphConfig(changes)));
  leaf.push(a.ms);
  leafBuilt = a.built;
  changes.set(middleIndex, i);
  const b = await applyText(JSON.stringify(graphConfig(changes)));
  middle.push(b.ms);
  middleBuilt = b.built;
}
await manager.closeAll(AbortSignal.timeout(60_000));
console.log(
  `leaf change: p50 ${round(median(leaf), 2)} ms (${leafBuilt} rebuilt); middle: p50 ${round(median(middle), 2)} ms (${middleBuilt} rebuilt)`,
);

writeResult({
  name: 'machine-reconfigure',
  machine: machineInfo(),
  parameters: { rounds, resourceCount, levels, perLevel },
  initialBuildMs: round(initial.ms, 1),
  leafChangeMs: leaf.map((v) => round(v, 2)),
  middleChangeMs: middle.map((v) => round(v, 2)),
  rebuilt: { leaf: leafBuilt, middle: middleBuilt },
  figures: [
    {
      metric: `initial build, ${resourceCount} resources in ${levels} levels`,
      value: `${round(initial.ms, 0)} ms`,
    },
    {
      metric: `one leaf changed (${leafBuilt} rebuilt), config → applied p50 / p95`,
      value: `${round(median(leaf), 1)} / ${round(percentile(leaf, 95), 1)} ms`,
    },
    {
      metric: `one mid-graph resource changed (${middleBuilt} rebuilt) p50 / p95`,
      value: `${round(median(middle), 1)} / ${round(percentile(middle, 95), 1)} ms`,
    },
  ],
});
