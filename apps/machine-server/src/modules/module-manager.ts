/**
 * The module manager (machine-runtime.md A3, A2.4 steps 4/5/10, A3.6): opens the parent server,
 * and for each reconfigure pass validates and first-runs added/modified modules (`prepare`; a throw
 * aborts the pass), then stops removed modules, restarts modified ones (their resources are returned
 * for rebuild) and starts added ones in parallel (`apply`). With `-untrusted-env` only modules whose
 * `module_id` namespace is `viam` run. `close` stops every module (SIGTERM, then SIGKILL).
 */
import { rm } from 'node:fs/promises';
import type { Clock } from '../clock.ts';
import type { ModuleConfig } from '../config/machine-config.ts';
import { errorMessage, MachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type {
  CloudMetadata,
  ModuleDiff,
  ModuleReconciler,
  ModuleTarget,
  ResourceLookup,
} from '../machine-host.ts';
import type { ModelRegistry } from '../resources/model-registry.ts';
import type { ResourceName } from '../resources/resource-name.ts';
import { runFirstRun } from './first-run.ts';
import { isTarballPath, unpackLocalTarball } from './local-tarball.ts';
import {
  createManagedModule,
  defaultModuleTimings,
  type ManagedModule,
  type ModuleStatus,
  type ModuleTimings,
  moduleArgs,
  moduleWorkingDir,
} from './managed-module.ts';
import {
  checkExecutable,
  freeTcpAddress,
  isTrustedModule,
  moduleEnvironment,
  moduleLogLevel,
  resolveExecutablePath,
} from './module-launch.ts';
import {
  createModuleDataDir,
  createModuleSocketDir,
  moduleSocketPath,
  parentSocketPath,
} from './module-paths.ts';
import { type ParentServer, startParentServer } from './parent-server.ts';

export interface ModuleManagerOptions {
  readonly registry: ModelRegistry;
  readonly resources: ResourceLookup;
  /** `rdk.modmanager`. */
  readonly logger: Logger;
  readonly clock: Clock;
  readonly viamHome: string;
  /** The environment modules inherit (the machine-server's). `VIAM_TCP_SOCKETS` turns off the unix parent socket. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `-untrusted-env`. */
  readonly untrustedEnv: boolean;
  /** `-debug` on the command line (modules without log_level then get `--log-level=debug`). */
  readonly debug: boolean;
  /** The machine part id (module data dir); undefined for a local config. */
  partId(): string | undefined;
  cloudMetadata(): CloudMetadata | undefined;
  /** A module came back after a crash: rebuild the resources it served. */
  requestRebuild(names: readonly ResourceName[]): void;
  readonly timings?: Partial<ModuleTimings>;
}

export interface ModuleManager extends ModuleReconciler {
  restart(target: ModuleTarget, signal: AbortSignal): Promise<{ rebuild: readonly ResourceName[] }>;
  /** Opens the parent server (before the first pass). */
  start(signal: AbortSignal): Promise<void>;
  statuses(): ModuleStatus[];
  /** The address modules call (unix socket path, or TCP with `VIAM_TCP_SOCKETS`). */
  parentAddress(): string;
  /** The parent server's `127.0.0.1:<port>` (`module_server_tcp_addr` of /restart_status). */
  parentTcpAddress(): string;
}

export function createModuleManager(options: ModuleManagerOptions): ModuleManager {
  const { logger } = options;
  const timings: ModuleTimings = { ...defaultModuleTimings, ...options.timings };
  const modules = new Map<string, ManagedModule>();
  /** Modules configured but not allowed to run, with the reason (shown in statuses). */
  const refused = new Map<string, string>();
  let socketDir: string | undefined;
  let parent: ParentServer | undefined;
  let latestConfig: ModuleDiff['config'] | undefined;
  const useTcpSockets = /^(true|yes|1)$/i.test(options.env.VIAM_TCP_SOCKETS ?? '');

  const requireStarted = () => {
    if (!parent || !socketDir) throw new MachineError('FailedPrecondition', 'module manager is not started');
    return { parent, socketDir };
  };

  /** Why a module may not run here (untrusted environment, shared executable), if it may not. */
  const refusal = (config: ModuleConfig, all: readonly ModuleConfig[]): string | undefined => {
    if (config.statusError) return `${config.path}: module is invalid: ${config.statusError}`;
    if (all.filter((other) => other.name === config.name).length > 1) {
      return `${config.path}.name: duplicate module name ${JSON.stringify(config.name)}; neither module runs`;
    }
    if (options.untrustedEnv && !isTrustedModule(config)) {
      return `${config.path}: modular resources disabled in untrusted environment (only modules with a viam: module_id run)`;
    }
    const executable = resolveExecutablePath(config);
    const first = all.find((other) => resolveExecutablePath(other) === executable);
    if (first && first.name !== config.name) {
      return `${config.path}.executable_path: already used by module ${JSON.stringify(first.name)}; two modules may not share an executable`;
    }
    return undefined;
  };

  /** The executable and module root: the configured path, or a local tarball unpacked (A3.1). */
  const locate = async (
    config: ModuleConfig,
    signal: AbortSignal,
  ): Promise<{ executable: string; root?: string }> => {
    const path = resolveExecutablePath(config);
    if (config.type !== 'local' || !isTarballPath(path)) return { executable: path };
    const unpacked = await unpackLocalTarball(config, path, options.viamHome, signal);
    return { executable: unpacked.executable, root: unpacked.root };
  };

  const environmentFor = async (
    config: ModuleConfig,
    located: { executable: string; root?: string },
    address: string,
  ) => {
    const dataDir = await createModuleDataDir(options.viamHome, options.partId(), config.name);
    return moduleEnvironment(config, {
      inherited: options.env,
      viamHome: options.viamHome,
      dataDir,
      executable: located.executable,
      ...(located.root ? { moduleRoot: located.root } : {}),
      address,
    });
  };

  const desiredLogLevel = (config: ModuleConfig) =>
    moduleLogLevel(config, options.debug || latestConfig?.debug === true, latestConfig?.log ?? []);

  const createModule = (config: ModuleConfig): ManagedModule => {
    const moduleLogger = logger.child(config.name);
    return createManagedModule({
      config,
      registry: options.registry,
      logger: moduleLogger,
      timings,
      onRestarted: (names) => options.requestRebuild(names),
      async launch() {
        const started = requireStarted();
        const located = await locate(config, AbortSignal.timeout(timings.startupTimeoutMs));
        const executable = located.executable;
        const address = config.tcpMode
          ? await freeTcpAddress()
          : moduleSocketPath(started.socketDir, config.name);
        const env = await environmentFor(config, located, address);
        const level = desiredLogLevel(config);
        return {
          logLevel: level,
          executable,
          args: moduleArgs(address, level, config.tcpMode),
          cwd: moduleWorkingDir(executable, env),
          env,
          address,
          parentAddress: config.tcpMode ? started.parent.tcpAddress : started.parent.address,
        };
      },
    });
  };

  const startModule = async (config: ModuleConfig, all: readonly ModuleConfig[], signal: AbortSignal) => {
    const reason = refusal(config, all);
    if (reason) {
      refused.set(config.name, reason);
      logger.error('module not started', { module: config.name, reason });
      return;
    }
    refused.delete(config.name);
    const module = createModule(config);
    modules.set(config.name, module);
    await module.start(signal);
  };

  const statuses = (): ModuleStatus[] =>
    [
      ...[...modules.values()].map((module) => module.status()),
      ...[...refused].map(
        ([name, error]): ModuleStatus => ({
          name,
          state: 'unhealthy',
          error,
          consecutiveFailures: 0,
          models: [],
        }),
      ),
    ].sort((a, b) => a.name.localeCompare(b.name));

  return {
    async start() {
      // Resources whose model is missing say which modules are not running and why.
      options.registry.setMissingModelHint?.(() => {
        const down = statuses().filter((status) => status.state !== 'ready' && status.error);
        if (down.length === 0) return undefined;
        return `modules not running: ${down.map((status) => `${status.name} (${status.error})`).join('; ')}`;
      });
      socketDir = await createModuleSocketDir();
      parent = await startParentServer({
        resources: options.resources,
        logger,
        clock: options.clock,
        cloudMetadata: options.cloudMetadata,
        socketPath: useTcpSockets ? undefined : parentSocketPath(socketDir),
      });
      logger.debug('module parent server listening', { address: parent.address, tcp: parent.tcpAddress });
    },

    async prepare(diff, signal) {
      latestConfig = diff.config;
      for (const config of [...diff.added, ...diff.modified]) {
        if (refusal(config, diff.config.modules)) continue;
        const located = await locate(config, signal);
        const executable = located.executable;
        await checkExecutable(config, executable);
        const env = await environmentFor(config, located, '');
        try {
          await runFirstRun({
            moduleName: config.name,
            moduleRoot: moduleWorkingDir(executable, env),
            env,
            timeoutMs: config.firstRunTimeoutMs,
            logger: logger.child(config.name),
            signal,
          });
        } catch (error) {
          throw new MachineError(
            'FailedPrecondition',
            `reconfiguration aborted because module ${config.name} first run failed: ${errorMessage(error)}`,
            { cause: error },
          );
        }
      }
    },

    async apply(diff, signal) {
      requireStarted();
      latestConfig = diff.config;
      const rebuild: ResourceName[] = [];
      const stopOne = async (name: string) => {
        refused.delete(name);
        const module = modules.get(name);
        if (!module) return [];
        modules.delete(name);
        return module.stop(signal);
      };
      await Promise.all(diff.removed.map((config) => stopOne(config.name)));
      // A4.2/A4.5: modules whose --log-level would change (debug switched, log patterns) restart too.
      const changed = new Set(
        [...diff.added, ...diff.modified, ...diff.removed].map((config) => config.name),
      );
      const relevelled = [...modules.values()]
        .filter((module) => !changed.has(module.name))
        .filter((module) => module.launchedLogLevel() !== desiredLogLevel(module.config))
        .map((module) => module.config);
      if (relevelled.length > 0) {
        logger.info('restarting modules for a new log level', {
          modules: relevelled.map((config) => config.name),
        });
      }
      await Promise.all(
        [...diff.modified, ...relevelled].map(async (config) => {
          rebuild.push(...(await stopOne(config.name)));
          await startModule(config, diff.config.modules, signal);
        }),
      );
      await Promise.all(
        diff.added
          .filter((config) => !modules.has(config.name))
          .map((config) => startModule(config, diff.config.modules, signal)),
      );
      return { rebuild };
    },

    async restart(target: ModuleTarget, signal: AbortSignal) {
      requireStarted();
      const module = [...modules.values()].find((candidate) =>
        'moduleId' in target
          ? candidate.config.moduleId === target.moduleId
          : candidate.name === target.moduleName,
      );
      const label =
        'moduleId' in target
          ? `module_id ${JSON.stringify(target.moduleId)}`
          : `module_name ${JSON.stringify(target.moduleName)}`;
      if (!module)
        throw new MachineError('NotFound', `${label}: no such module is configured on this machine`);
      logger.info('restarting module on request', { module: module.name });
      modules.delete(module.name);
      const rebuild = await module.stop(signal);
      await startModule(module.config, latestConfig?.modules ?? [module.config], signal);
      return { rebuild };
    },

    async close(signal) {
      const all = [...modules.values()];
      modules.clear();
      await Promise.all(all.map((module) => module.stop(signal)));
      await parent?.close();
      parent = undefined;
      if (socketDir) await rm(socketDir, { recursive: true, force: true });
      socketDir = undefined;
    },

    statuses,
    parentAddress: () => requireStarted().parent.address,
    parentTcpAddress: () => requireStarted().parent.tcpAddress,
  };
}
