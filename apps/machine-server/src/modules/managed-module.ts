/**
 * One configured module and its process over time (machine-runtime.md A3.2, A3.4, A3.5):
 * launch (argv, environment, working dir), readiness, the models it serves registered in the model
 * registry (ValidateConfig / AddResource / RemoveResource behind each registration), restart after a
 * crash (first attempt `restartDelayMs` after the exit, then every `restartDelayMs` until it works)
 * with its resources handed back for rebuild, and stop (RemoveResource for each resource within
 * 20 s, then SIGTERM → SIGKILL).
 *
 * Status: pending → starting → ready | unhealthy (error, consecutive failures) → closing.
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Transport } from '@connectrpc/connect';
import type { ModuleConfig } from '../config/machine-config.ts';
import { errorMessage, MachineError } from '../errors.ts';
import type { Logger, LogLevel } from '../logging/logger.ts';
import { type ModelRegistration, type ModelRegistry, noDependencies } from '../resources/model-registry.ts';
import type { Resource } from '../resources/resource.ts';
import { formatApi, formatModel, formatResourceName, type ResourceName } from '../resources/resource-name.ts';
import { componentConfigFromResourceConfig } from './component-config.ts';
import { createModularResource } from './modular-resource.ts';
import { connectModule, type ModuleConnection } from './module-connection.ts';
import { describeExit, type ModuleExit, type ModuleProcess, spawnModuleProcess } from './module-process.ts';
import { errorFromModule, isUnimplemented } from './rpc-errors.ts';

export type ModuleState = 'pending' | 'starting' | 'ready' | 'unhealthy' | 'closing' | 'closed';

export interface ModuleStatus {
  readonly name: string;
  readonly state: ModuleState;
  readonly error?: string;
  readonly consecutiveFailures: number;
  readonly pid?: number;
  /** `api model` pairs the module registered. */
  readonly models: readonly string[];
}

export interface ModuleTimings {
  /** Socket + Ready (A3.2: 5 min, `VIAM_MODULE_STARTUP_TIMEOUT`). */
  readonly startupTimeoutMs: number;
  /** Before each restart attempt after a crash (5 s). */
  readonly restartDelayMs: number;
  /** SIGTERM → SIGKILL (10 s). */
  readonly stopTimeoutMs: number;
  /** All RemoveResource calls at stop (20 s). */
  readonly removeBudgetMs: number;
  /** ValidateConfig (5 s). */
  readonly validateTimeoutMs: number;
}

export const defaultModuleTimings: ModuleTimings = {
  startupTimeoutMs: 5 * 60_000,
  restartDelayMs: 5000,
  stopTimeoutMs: 10_000,
  removeBudgetMs: 20_000,
  validateTimeoutMs: 5000,
};

/** Everything needed to start the process, computed by the manager. */
export interface ModuleLaunch {
  readonly executable: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** Module address: socket path, or `127.0.0.1:<port>` in TCP mode. */
  readonly address: string;
  readonly parentAddress: string;
  /** The `--log-level` in `args`, if any. */
  readonly logLevel: LogLevel | undefined;
}

export interface ManagedModuleOptions {
  readonly config: ModuleConfig;
  /** Builds the launch for each attempt (TCP mode picks a fresh port). */
  launch(): Promise<ModuleLaunch>;
  readonly registry: ModelRegistry;
  /** `rdk.modmanager.<name>`. */
  readonly logger: Logger;
  readonly timings: ModuleTimings;
  /** After a restart: the resources the module served, to rebuild (AddResource again). */
  onRestarted(resources: readonly ResourceName[]): void;
}

export interface ManagedModule {
  readonly name: string;
  readonly config: ModuleConfig;
  /** First start; resolves once ready or failed (then retried in the background). */
  start(signal: AbortSignal): Promise<void>;
  /** Removes its resources, stops the process; returns the resources it served. */
  stop(signal: AbortSignal): Promise<ResourceName[]>;
  status(): ModuleStatus;
  /** The full names of the resources currently built on it. */
  servedResources(): ResourceName[];
  /** The `--log-level` of the current (or last) process. */
  launchedLogLevel(): LogLevel | undefined;
}

export function createManagedModule(options: ManagedModuleOptions): ManagedModule {
  const { config, logger, timings } = options;
  const name = config.name;
  let state: ModuleState = 'pending';
  let error: string | undefined;
  let failures = 0;
  let process: ModuleProcess | undefined;
  let connection: ModuleConnection | undefined;
  let unregisters: (() => void)[] = [];
  let registeredModels: string[] = [];
  let restartTimer: NodeJS.Timeout | undefined;
  let launchedLevel: LogLevel | undefined;
  const lifetime = new AbortController();
  /** full name → the proxy built for it (a rebuild replaces it; only the owner's close removes it). */
  const served = new Map<string, { name: ResourceName; proxy: Resource }>();

  /** Calls go to whichever process is current, so proxies survive restarts. */
  const transport: Transport = {
    unary: (...args) => current('call').transport.unary(...args),
    stream: (...args) => current('call').transport.stream(...args),
  };
  const current = (what: string): ModuleConnection => {
    if (!connection || state !== 'ready') {
      throw new MachineError(
        'Unavailable',
        `module ${name} is not running (${error ?? state}); cannot ${what}`,
      );
    }
    return connection;
  };

  const registrationFor = (
    api: ModelRegistration['api'],
    model: ModelRegistration['model'],
  ): ModelRegistration => ({
    api,
    model,
    source: name,
    async validate(resourceConfig, signal) {
      const client = current('validate').client;
      try {
        const response = await client.validateConfig(
          { config: componentConfigFromResourceConfig(resourceConfig) },
          { signal: AbortSignal.any([signal, AbortSignal.timeout(timings.validateTimeoutMs)]) },
        );
        return { requiredDeps: response.dependencies, optionalDeps: response.optionalDependencies };
      } catch (cause) {
        if (isUnimplemented(cause)) return noDependencies;
        throw errorFromModule(cause, `${resourceConfig.path}: module ${name} rejected the config`);
      }
    },
    async build(context) {
      const key = formatResourceName(context.config.resourceName);
      const client = current('add a resource').client;
      try {
        await client.addResource(
          {
            config: componentConfigFromResourceConfig(context.config),
            dependencies: [...context.dependencies.all.keys()],
          },
          { signal: context.signal },
        );
      } catch (cause) {
        throw errorFromModule(cause, `module ${name}: AddResource ${key}`);
      }
      const entry = {
        name: context.config.resourceName,
        proxy: undefined as unknown as Resource,
      };
      entry.proxy = createModularResource({
        name: context.config.resourceName,
        moduleName: name,
        transport,
        remove: async (signal) => {
          if (served.get(key) !== entry) return;
          served.delete(key);
          await removeResource(key, signal);
        },
      });
      served.set(key, entry);
      return entry.proxy;
    },
  });

  const removeResource = async (key: string, signal: AbortSignal) => {
    if (!connection) return;
    try {
      await connection.client.removeResource({ name: key }, { signal });
    } catch (cause) {
      logger.debug('RemoveResource failed', { resource: key, error: errorMessage(cause) });
    }
  };

  const unregisterModels = () => {
    for (const unregister of unregisters) unregister();
    unregisters = [];
    registeredModels = [];
  };

  const dropConnection = async (address: string | undefined) => {
    connection?.close();
    connection = undefined;
    if (address && !address.includes(':')) await rm(address, { force: true });
  };

  /** One attempt: spawn, wait for the socket, Ready, register models. */
  const attempt = async (signal: AbortSignal): Promise<void> => {
    state = 'starting';
    const launch = await options.launch();
    launchedLevel = launch.logLevel;
    const child = spawnModuleProcess({
      executable: launch.executable,
      args: launch.args,
      cwd: launch.cwd,
      env: launch.env,
      logger,
      stopTimeoutMs: timings.stopTimeoutMs,
    });
    process = child;
    try {
      connection = await connectModule({
        moduleName: name,
        address: launch.address,
        waitForSocketFile: !config.tcpMode,
        parentAddress: launch.parentAddress,
        process: child,
        startupTimeoutMs: timings.startupTimeoutMs,
        signal,
      });
    } catch (cause) {
      await child.stop();
      await dropConnection(launch.address);
      throw cause;
    }
    const registrations = connection.handlers.flatMap((handler) =>
      handler.models.map((model) => registrationFor(handler.api, model)),
    );
    try {
      unregisters = registrations.map((registration) => options.registry.register(registration));
    } catch (cause) {
      unregisterModels();
      await child.stop();
      await dropConnection(launch.address);
      throw cause;
    }
    registeredModels = registrations.map((r) => `${formatApi(r.api)} ${formatModel(r.model)}`);
    state = 'ready';
    error = undefined;
    failures = 0;
    logger.info('module ready', { pid: child.pid, models: registeredModels });
    void child.exited.then((exit) => onExit(child, launch.address, exit));
  };

  const onExit = async (child: ModuleProcess, address: string, exit: ModuleExit) => {
    if (child !== process || state === 'closing' || state === 'closed') return;
    logger.error('Module has unexpectedly exited.', { exit_code: exit.code, signal: exit.signal });
    state = 'unhealthy';
    error = `module exited unexpectedly (${describeExit(exit)})`;
    failures++;
    unregisterModels();
    await dropConnection(address);
    scheduleRestart();
  };

  const scheduleRestart = () => {
    if (lifetime.signal.aborted) return;
    logger.info(`restarting module in ${timings.restartDelayMs} ms`);
    restartTimer = setTimeout(async () => {
      restartTimer = undefined;
      if (lifetime.signal.aborted) return;
      try {
        await attempt(lifetime.signal);
        logger.info('module restarted', { resources: served.size });
        options.onRestarted([...served.values()].map((entry) => entry.name));
      } catch (cause) {
        if (lifetime.signal.aborted) return;
        state = 'unhealthy';
        error = errorMessage(cause);
        failures++;
        logger.error('module restart failed', { error, consecutive_failures: failures });
        scheduleRestart();
      }
    }, timings.restartDelayMs);
  };

  return {
    name,
    config,
    async start(signal) {
      try {
        await attempt(AbortSignal.any([signal, lifetime.signal]));
      } catch (cause) {
        if (lifetime.signal.aborted) return;
        state = 'unhealthy';
        error = errorMessage(cause);
        failures++;
        logger.error('module failed to start', { error });
        scheduleRestart();
      }
    },
    async stop(signal) {
      const resources = [...served.values()].map((entry) => entry.name);
      if (state === 'closed') return resources;
      state = 'closing';
      lifetime.abort(new MachineError('Aborted', `module ${name} is stopping`));
      clearTimeout(restartTimer);
      const budget = AbortSignal.any([signal, AbortSignal.timeout(timings.removeBudgetMs)]);
      await Promise.all([...served.keys()].map((key) => removeResource(key, budget)));
      served.clear();
      unregisterModels();
      const child = process;
      if (child && !child.exitStatus()) {
        const exit = await child.stop();
        if (exit.code !== 0 && exit.code !== 143 && exit.signal !== 'SIGTERM') {
          logger.warn('module stopped', { exit: describeExit(exit) });
        }
      }
      connection?.close();
      connection = undefined;
      state = 'closed';
      return resources;
    },
    status: () => ({
      name,
      state,
      consecutiveFailures: failures,
      models: registeredModels,
      ...(error === undefined ? {} : { error }),
      ...(process?.pid === undefined || process.exitStatus() ? {} : { pid: process.pid }),
    }),
    servedResources: () => [...served.values()].map((entry) => entry.name),
    launchedLogLevel: () => launchedLevel,
  };
}

/** `--log-level=<lvl>` and the working directory of a module (A3.2, A4.5). */
export function moduleArgs(address: string, logLevel: LogLevel | undefined, tcpMode: boolean): string[] {
  return [address, ...(logLevel ? [`--log-level=${logLevel}`] : []), ...(tcpMode ? ['--tcp-mode'] : [])];
}

export function moduleWorkingDir(executable: string, env: Readonly<Record<string, string>>): string {
  return env.VIAM_MODULE_ROOT || dirname(executable);
}
