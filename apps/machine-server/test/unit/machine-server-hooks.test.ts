/**
 * The extension contract of startMachineServer (in process): models registered by an extension are
 * buildable, extensions start before the first pass and stop in reverse order before resources close,
 * the module reconciler prepares before and applies after removals within each pass, and status,
 * lookup and shutdown requests work through the MachineHost.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createSilentLogger } from '../../src/logging/logger.ts';
import type {
  MachineExtension,
  MachineHost,
  MachineServerOptions,
  ModuleReconciler,
} from '../../src/machine-host.ts';
import { startMachineServer } from '../../src/machine-server.ts';
import { builtinModel, componentApi, createResourceName } from '../../src/resources/resource-name.ts';

function options(configPath: string, viamHome: string): MachineServerOptions {
  return {
    configPath,
    debug: false,
    disableMdns: true,
    noTls: false,
    allowInsecureCreds: false,
    webrtc: false,
    webProfile: false,
    untrustedEnv: false,
    revealSensitiveConfigDiffs: false,
    outputTelemetry: false,
    ftdc: false,
    viamHome,
    env: {},
  };
}

describe('startMachineServer hooks', () => {
  it('runs extensions and the module reconciler in the documented order', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ms-hooks-'));
    const events: string[] = [];
    const widgetApi = componentApi('widget');
    const extension = (name: string): MachineExtension => ({
      name,
      registerModels(registry) {
        if (name !== 'first') return;
        registry.register({
          api: widgetApi,
          model: builtinModel('spinner'),
          source: 'builtin',
          async build({ config }) {
            events.push(`build ${config.name}`);
            return {
              name: config.resourceName,
              doCommand: async () => ({ spun: true }),
              close: async () => {
                events.push(`close ${config.name}`);
              },
            };
          },
        });
      },
      async start() {
        events.push(`start ${name}`);
      },
      async configApplied(config) {
        events.push(`applied ${name} ${config.components.length}`);
      },
      async stop() {
        events.push(`stop ${name}`);
      },
    });
    const reconciler: ModuleReconciler = {
      async prepare(diff) {
        events.push(`prepare +${diff.added.length}`);
      },
      async apply(diff) {
        events.push(`modules +${diff.added.length}`);
        return { rebuild: [] };
      },
      async close() {
        events.push('modules closed');
      },
    };
    const configPath = path.join(dir, 'machine.json');
    await writeFile(
      configPath,
      JSON.stringify({
        components: [{ name: 'w1', api: 'rdk:component:widget', model: 'spinner' }],
        modules: [{ name: 'mod', executable_path: '/bin/true' }],
      }),
    );
    const logger = createSilentLogger();
    const server = await startMachineServer(options(configPath, path.join(dir, 'home')), {
      logging: { logger, applyConfig() {}, attachCloud() {}, close: async () => {} },
      extensions: [extension('first'), extension('second')],
      moduleReconciler: reconciler,
    });
    await server.ready;
    const host: MachineHost = server.host;
    assert.equal(host.status().state, 'running');
    const widget = host.resources.findByShortName(widgetApi, 'w1');
    assert.deepEqual(await widget.doCommand({}, { signal: AbortSignal.timeout(1000) }), { spun: true });
    assert.deepEqual(host.resources.names(), [createResourceName(widgetApi, 'w1')]);
    host.requestShutdown('test');
    assert.equal(await server.stopped, 'test');
    assert.deepEqual(events, [
      'start first',
      'start second',
      'prepare +1',
      'modules +1',
      'build w1',
      'applied first 1',
      'applied second 1',
      'stop second',
      'stop first',
      'close w1',
      'modules closed',
    ]);
    await rm(dir, { recursive: true, force: true });
  });
});
