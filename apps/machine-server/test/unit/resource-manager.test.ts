import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { diffConfigs } from '../../src/config/config-diff.ts';
import { type MachineConfig, parseMachineConfig } from '../../src/config/machine-config.ts';
import { createSilentLogger, type Logger } from '../../src/logging/logger.ts';
import { createModelRegistry } from '../../src/resources/model-registry.ts';
import { createResourceManager } from '../../src/resources/resource-manager.ts';
import { builtinModel, componentApi, formatResourceName } from '../../src/resources/resource-name.ts';

/** A registry with one model `test` for `rdk:component:generic` that records builds and closes. */
function harness() {
  const events: string[] = [];
  const failing = new Set<string>();
  let inFlight = 0;
  let maxInFlight = 0;
  const registry = createModelRegistry();
  registry.register({
    api: componentApi('generic'),
    model: builtinModel('test'),
    source: 'builtin',
    validate: (config) => ({
      requiredDeps: Array.isArray(config.attributes.needs) ? (config.attributes.needs as string[]) : [],
      optionalDeps: [],
    }),
    async build({ config, dependencies }) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      if (failing.has(config.name)) throw new Error(`${config.name} is broken`);
      events.push(
        `build ${config.name} [${[...dependencies.all.keys()].map((k) => k.split('/')[1]).join(',')}]`,
      );
      return {
        name: config.resourceName,
        doCommand: async () => ({}),
        close: async () => {
          events.push(`close ${config.name}`);
        },
      };
    },
  });
  const manager = createResourceManager({ registry, logger: createSilentLogger(), clock: systemClock });
  let current: MachineConfig | undefined;
  const apply = async (components: object[]) => {
    const next = parseMachineConfig({ components }, { source: 'local' });
    const diff = diffConfigs(current, next);
    current = next;
    await manager.apply(next.components, diff.resources, 'r', AbortSignal.timeout(5000));
    return manager.completePass(AbortSignal.timeout(5000));
  };
  const state = () =>
    Object.fromEntries(
      manager.statuses().map((s) => [s.name.name, s.error ? `${s.state}: ${s.error}` : s.state]),
    );
  return { events, failing, apply, manager, state, maxInFlight: () => maxInFlight };
}

const g = (name: string, extra: object = {}) => ({
  name,
  api: 'rdk:component:generic',
  model: 'test',
  ...extra,
});

describe('resource manager (A2.3–A2.5)', () => {
  it('builds in dependency order, bounded, and passes dependencies', async () => {
    const h = harness();
    const many = Array.from({ length: 25 }, (_, i) => g(`n${i}`));
    await h.apply([
      g('top', { depends_on: ['mid'] }),
      g('mid', { attributes: { needs: ['base'] } }),
      g('base'),
      ...many,
    ]);
    const order = h.events.filter((e) => /base|mid|top/.test(e));
    assert.deepEqual(order, ['build base []', 'build mid [base]', 'build top [mid]']);
    assert.ok(h.maxInFlight() <= 10, `at most 10 concurrent builds, saw ${h.maxInFlight()}`);
    assert.ok(h.maxInFlight() > 1, 'independent resources are built concurrently');
  });

  it('rebuilds only the changed resource and its dependents', async () => {
    const h = harness();
    await h.apply([g('a'), g('b', { depends_on: ['a'] }), g('c')]);
    h.events.length = 0;
    await h.apply([g('a', { attributes: { x: 1 } }), g('b', { depends_on: ['a'] }), g('c')]);
    assert.deepEqual(h.events, ['close a', 'build a []', 'close b', 'build b [a]']);
  });

  it('a failing resource blocks only its dependents and recovers on retry', async () => {
    const h = harness();
    h.failing.add('bad');
    await h.apply([g('bad'), g('child', { depends_on: ['bad'] }), g('fine')]);
    const s = h.state();
    assert.equal(s.fine, 'ready');
    assert.match(String(s.bad), /^unhealthy: resource build error: bad is broken/);
    assert.match(
      String(s.child),
      /^unhealthy: waiting for dependencies that are not ready: rdk:component:generic\/bad/,
    );
    assert.ok(h.manager.needsWork());
    h.failing.delete('bad');
    await h.manager.completePass(AbortSignal.timeout(5000));
    assert.deepEqual(h.state(), { bad: 'ready', child: 'ready', fine: 'ready' });
    assert.equal(h.manager.needsWork(), false);
  });

  it('unknown model, cycles, duplicates and missing dependencies affect only those resources', async () => {
    const h = harness();
    await h.apply([
      { name: 'u', api: 'rdk:component:generic', model: 'acme:x:nope' },
      g('c1', { depends_on: ['c2'] }),
      g('c2', { depends_on: ['c1'] }),
      g('dup'),
      g('dup'),
      g('orphan', { depends_on: ['ghost'] }),
      g('ok'),
    ]);
    const s = h.state();
    assert.equal(s.ok, 'ready');
    assert.match(String(s.u), /unknown model acme:x:nope/);
    assert.match(String(s.c1), /dependency cycle/);
    assert.match(String(s.dup), /duplicate resource name .*components\[3\] and components\[4\]/);
    assert.match(String(s.orphan), /unresolved dependencies not found in machine config: ghost/);
  });

  it('closes dependents first on removal and at shutdown', async () => {
    const h = harness();
    await h.apply([g('a'), g('b', { depends_on: ['a'] }), g('c', { depends_on: ['b'] })]);
    h.events.length = 0;
    await h.apply([g('b'), g('c', { depends_on: ['b'] })].slice(0, 0).concat([g('x')]));
    assert.deepEqual(h.events.slice(0, 3), ['close c', 'close b', 'close a']);
    const order = await h.manager.closeAll(AbortSignal.timeout(5000));
    assert.deepEqual(
      order.map((k) => k.split('/')[1]),
      ['x'],
    );
    const h2 = harness();
    await h2.apply([g('a'), g('b', { depends_on: ['a'] }), g('c', { depends_on: ['b'] })]);
    const closeOrder = await h2.manager.closeAll(AbortSignal.timeout(5000));
    assert.deepEqual(
      closeOrder.map((k) => k.split('/')[1]),
      ['c', 'b', 'a'],
    );
    assert.equal(
      formatResourceName(
        h2.manager.statuses()[0]?.name ?? { api: componentApi('x'), remotePath: [], name: 'none' },
      ),
      'rdk:component:x/none',
    );
  });
});

describe('close deadlines (A2.5)', () => {
  it('a resource whose close hangs is abandoned at its deadline; the others (and its dependencies) still close', async () => {
    const closed: string[] = [];
    const warnings: string[] = [];
    const registry = createModelRegistry();
    registry.register({
      api: componentApi('generic'),
      model: builtinModel('test'),
      source: 'builtin',
      async build({ config }) {
        return {
          name: config.resourceName,
          doCommand: async () => ({}),
          // `stuck` ignores its deadline signal and never finishes.
          close: () =>
            config.name === 'stuck'
              ? new Promise<void>(() => {})
              : Promise.resolve().then(() => {
                  closed.push(config.name);
                }),
        };
      },
    });
    const logger: Logger = {
      ...createSilentLogger(),
      warn: (message, fields) => {
        warnings.push(`${message} ${JSON.stringify(fields)}`);
      },
    };
    const manager = createResourceManager({ registry, logger, clock: systemClock, closeTimeoutMs: 300 });
    const next = parseMachineConfig(
      {
        components: [
          g('base'),
          g('stuck', { depends_on: ['base'] }),
          g('top', { depends_on: ['stuck'] }),
          g('alone'),
        ],
      },
      { source: 'local' },
    );
    await manager.apply(
      next.components,
      diffConfigs(undefined, next).resources,
      'r',
      AbortSignal.timeout(5000),
    );
    await manager.completePass(AbortSignal.timeout(5000));
    const started = performance.now();
    const order = await manager.closeAll(AbortSignal.timeout(10_000));
    const elapsedMs = performance.now() - started;
    const names = order.map((key) => key.split('/')[1]);
    assert.deepEqual(names.slice(0, 2), ['top', 'stuck']);
    assert.deepEqual(names.slice(2).sort(), ['alone', 'base']);
    assert.deepEqual(closed.sort(), ['alone', 'base', 'top']);
    assert.ok(elapsedMs >= 280 && elapsedMs < 2000, `closeAll took ${Math.round(elapsedMs)} ms`);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0] ?? '', /did not close within the deadline.*generic\/stuck.*"deadline_ms":300/);
  });
});
