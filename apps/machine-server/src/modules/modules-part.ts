/**
 * Modules as a part of every machine-server: a MachineExtension whose `start` opens the module parent
 * server with the running machine's resources, and the ModuleReconciler the reconfigure pass calls
 * (A2.4 steps 4/5/10; shutdown closes modules after resources). Timings: `VIAM_MODULE_STARTUP_TIMEOUT`
 * (Go duration, default 5 min) overrides the start-up limit.
 */
import { parseGoDurationMs } from '../config/go-duration.ts';
import { MachineError } from '../errors.ts';
import type { MachineExtension, MachineServerOptions, ModuleReconciler } from '../machine-host.ts';
import type { ModuleTimings } from './managed-module.ts';
import { createModuleDiagnostics } from './module-diagnostics.ts';
import { createModuleManager, type ModuleManager } from './module-manager.ts';

export interface ModulesPart {
  readonly extension: MachineExtension;
  readonly reconciler: ModuleReconciler;
  /** The manager once the extension started (statuses for GetMachineStatus, tests). */
  manager(): ModuleManager | undefined;
}

export function createModulesPart(
  options: Pick<MachineServerOptions, 'env' | 'untrustedEnv' | 'debug' | 'viamHome'>,
  timings: Partial<ModuleTimings> = {},
): ModulesPart {
  let manager: ModuleManager | undefined;
  const startup = options.env.VIAM_MODULE_STARTUP_TIMEOUT;
  const allTimings: Partial<ModuleTimings> = {
    ...(startup ? { startupTimeoutMs: parseGoDurationMs(startup, 'VIAM_MODULE_STARTUP_TIMEOUT') } : {}),
    ...timings,
  };
  const started = (): ModuleManager => {
    if (!manager) throw new MachineError('FailedPrecondition', 'modules: the module manager has not started');
    return manager;
  };
  const diagnostics = createModuleDiagnostics();
  return {
    manager: () => manager,
    extension: {
      name: 'modules',
      diagnostics: () => diagnostics(manager?.statuses() ?? []),
      async start(host, signal) {
        manager = createModuleManager({
          registry: host.registry,
          resources: host.resources,
          logger: host.logger.child('modmanager'),
          clock: host.clock,
          viamHome: options.viamHome,
          env: options.env,
          untrustedEnv: options.untrustedEnv,
          debug: options.debug,
          partId: () => host.currentConfig().cloud?.id,
          cloudMetadata: () => (host.cloud ? host.cloudMetadata() : undefined),
          requestRebuild: (names) => host.requestRebuild(names),
          timings: allTimings,
        });
        await manager.start(signal);
      },
    },
    reconciler: {
      prepare: (diff, signal) => started().prepare(diff, signal),
      apply: (diff, signal) => started().apply(diff, signal),
      restart: (target, signal) => started().restart(target, signal),
      async close(signal) {
        await manager?.close(signal);
      },
    },
  };
}
