/**
 * The machine-server lifecycle (machine-runtime.md A0, A1, A2, A8, A9): load the config (cloud with
 * cache fallback, or a local file), start extensions (web server, data manager, …), apply the config
 * through the resource manager, then keep it current — the cloud poll every `refresh_interval`
 * (default 15 s), pushes over the live machine connection, the local file watcher — with one
 * reconfigure pass at a time and a 5 s retry pass while resources are not ready.
 * `stop()` closes everything in order: loops, extensions (reverse), resources (dependents first),
 * modules, cloud connection, logging.
 */
import { readFile } from 'node:fs/promises';
import { registerBuiltinModels } from './builtins/register-builtins.ts';
import { type Clock, systemClock } from './clock.ts';
import { CloudConfigError, fetchCloudConfig } from './cloud/cloud-config-fetch.ts';
import { type CloudConnection, createCloudConnection } from './cloud/cloud-connection.ts';
import {
  type MachineConnectionStream,
  startMachineConnectionStream,
} from './cloud/machine-connection-stream.ts';
import { type NeedsRestartPoller, startNeedsRestartPoller } from './cloud/needs-restart-poller.ts';
import { createSerialQueue, sleep, withDeadline } from './concurrency.ts';
import { mergeLocalCloudFields } from './config/cloud-config-merge.ts';
import { createConfigCache } from './config/config-cache.ts';
import { type ConfigDiff, diffConfigs, isEmptyDiff } from './config/config-diff.ts';
import { type ConfigFileWatcher, watchConfigFile } from './config/config-file-watcher.ts';
import { processConfigJson } from './config/config-processing.ts';
import { configTextDiff } from './config/config-text-diff.ts';
import { parseGoDurationMs } from './config/go-duration.ts';
import { type MachineConfig, parseMachineConfig, substituteEnv } from './config/machine-config.ts';
import { errorMessage, invalidConfig } from './errors.ts';
import type { JsonObject } from './json.ts';
import { createConsoleLogger, type Logger } from './logging/logger.ts';
import type {
  MachineExtension,
  MachineHost,
  MachineLogging,
  MachineServerOptions,
  MachineStatus,
  ModuleReconciler,
} from './machine-host.ts';
import { checkMaintenanceWindow } from './maintenance/maintenance-gate.ts';
import { createModelRegistry, type ModelRegistry } from './resources/model-registry.ts';
import { createResourceManager, type ResourceManager } from './resources/resource-manager.ts';
import { formatResourceName } from './resources/resource-name.ts';
import { apiVersion, gitRevision, machineServerVersion } from './version.ts';

export interface MachineServerDependencies {
  readonly clock?: Clock;
  readonly logging?: MachineLogging;
  readonly extensions?: readonly MachineExtension[];
  readonly moduleReconciler?: ModuleReconciler;
  readonly registry?: ModelRegistry;
}

export interface RunningMachineServer {
  readonly host: MachineHost;
  /** Resolves once the first full configuration has been applied (machine state RUNNING). */
  readonly ready: Promise<void>;
  /** Resolves with the reason as soon as a shutdown begins (stop(), Shutdown RPC, NeedsRestart). */
  readonly stopping: Promise<string>;
  /** Resolves with the reason once the server has stopped. */
  readonly stopped: Promise<string>;
  stop(reason?: string): Promise<void>;
}

const retryIntervalMs = 5000;

/** The default logging: console lines at info (debug with -debug or `debug: true`). */
export function createDefaultLogging(debug: boolean): MachineLogging {
  let level: 'debug' | 'info' = debug ? 'debug' : 'info';
  const sink = (line: string) => process.stdout.write(`${line}\n`);
  const make = (name: string): Logger => {
    const pick = () => createConsoleLogger(name, { level, write: sink });
    return {
      name,
      debug: (m, f) => pick().debug(m, f),
      info: (m, f) => pick().info(m, f),
      warn: (m, f) => pick().warn(m, f),
      error: (m, f) => pick().error(m, f),
      child: (child) => make(`${name}.${child}`),
    };
  };
  return {
    logger: make('rdk'),
    applyConfig(config) {
      level = debug || config.debug ? 'debug' : 'info';
    },
    attachCloud() {},
    async close() {},
  };
}

export async function startMachineServer(
  options: MachineServerOptions,
  dependencies: MachineServerDependencies = {},
): Promise<RunningMachineServer> {
  const clock = dependencies.clock ?? systemClock;
  const logging = dependencies.logging ?? createDefaultLogging(options.debug);
  const logger = logging.logger;
  const configLogger = logger.child('config');
  const registry = dependencies.registry ?? createModelRegistry();
  const extensions = dependencies.extensions ?? [];
  const reconciler = dependencies.moduleReconciler;
  registerBuiltinModels(registry, clock);
  for (const extension of extensions) extension.registerModels?.(registry);

  const lifetime = new AbortController();
  const manager: ResourceManager = createResourceManager({
    registry,
    logger: logger.child('resource_manager'),
    clock,
  });

  // A0.8: the local file (credentials or a full config), env-substituted, parsed once.
  const localText = await readFile(options.configPath, 'utf8').catch((error: Error) => {
    throw invalidConfig('-config', `cannot read ${options.configPath}: ${error.message}`);
  });
  let localJson: JsonObject;
  try {
    localJson = JSON.parse(substituteEnv(localText, options.env)) as JsonObject;
  } catch (error) {
    throw invalidConfig('-config', `${options.configPath} is not valid JSON: ${errorMessage(error)}`);
  }
  const localConfig = parseMachineConfig(localJson, { source: 'local' });
  const cloudSection = localConfig.cloud;
  let connection: CloudConnection | undefined;
  if (cloudSection) {
    if (!cloudSection.appAddress) throw invalidConfig('cloud.app_address', 'is required to reach the cloud');
    checkPlaintextCredentials(cloudSection.appAddress, options.allowInsecureCreds);
    connection = createCloudConnection({
      appAddress: cloudSection.appAddress,
      credentials: {
        partId: cloudSection.id,
        ...(cloudSection.secret ? { secret: cloudSection.secret } : {}),
        ...(cloudSection.apiKey ? { apiKey: cloudSection.apiKey } : {}),
      },
    });
    logging.attachCloud(connection, cloudSection.id);
  }
  const cache = cloudSection ? createConfigCache(options.viamHome, cloudSection.id) : undefined;

  let current: MachineConfig = { ...localConfig, components: [], services: [], modules: [] };
  let appliedOnce = false;
  let configStatus = { revision: '', lastUpdated: clock.now() };
  let reconfiguring = false;
  let resolveReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });
  let resolveStopping: (reason: string) => void = () => {};
  const stoppingPromise = new Promise<string>((resolve) => {
    resolveStopping = resolve;
  });
  let resolveStopped: (reason: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => {
    resolveStopped = resolve;
  });

  // The process lives until stop(), whatever else holds the event loop.
  const keepAlive = setInterval(() => {}, 1 << 30);
  const queue = createSerialQueue();
  let retryTimer: NodeJS.Timeout | undefined;
  const scheduleRetry = (delayMs: number) => {
    if (lifetime.signal.aborted) return;
    if (retryTimer && delayMs > 0) return;
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void queue(async () => {
        if (lifetime.signal.aborted || !appliedOnce || !manager.needsWork()) return;
        reconfiguring = true;
        try {
          const report = await manager.completePass(lifetime.signal);
          if (report.built.length > 0) logger.info('retry pass rebuilt resources', { built: report.built });
        } catch (error) {
          if (!lifetime.signal.aborted) logger.error('retry pass failed', { error: errorMessage(error) });
        } finally {
          reconfiguring = false;
        }
        if (manager.needsWork()) scheduleRetry(retryIntervalMs);
      });
    }, delayMs);
  };

  registry.onChange((change) => {
    manager.markModelChanged(change.registration.api, change.registration.model);
    scheduleRetry(0);
  });

  /** The config last refused by the maintenance window (logged once, re-checked on every delivery). */
  let lastBlocked: string | undefined;
  /** One reconfigure pass for a new config (A1.8 + A2.4). */
  const applyConfig = async (
    next: MachineConfig,
    initial: boolean,
    rawForCache?: JsonObject,
  ): Promise<void> => {
    const diff = diffConfigs(appliedOnce ? current : undefined, next);
    if (appliedOnce && isEmptyDiff(diff)) return;
    if (!diff.logEqual || !diff.resourcesEqual) logging.applyConfig(next);
    if (options.revealSensitiveConfigDiffs) {
      configLogger.debug(
        `${appliedOnce ? 'Reconfiguring' : 'Constructing'} with\n${configTextDiff(appliedOnce ? current.raw : undefined, next.raw)}`,
      );
    }
    if (!initial && !diff.resourcesEqual && next.maintenance) {
      const decision = await checkMaintenanceWindow(
        next.maintenance,
        manager.lookup,
        configLogger,
        lifetime.signal,
      );
      if (!decision.allowed) {
        const blockedKey = JSON.stringify(next.raw);
        if (blockedKey === lastBlocked) return;
        lastBlocked = blockedKey;
        configLogger.info(
          diff.networkEqual
            ? 'Reconfigure NOT allowed by maintenance sensor'
            : 'Reconfigure NOT allowed by maintenance sensor, but Cloud/Auth/Network config changes will be applied',
          { reason: decision.reason },
        );
        if (!diff.networkEqual) {
          // The running config takes the new cloud/network/auth sections (API keys, location secrets,
          // bind address) while its resources stay as they are until the window opens.
          current = {
            ...current,
            cloud: next.cloud,
            network: next.network,
            auth: next.auth,
            enableWebProfile: next.enableWebProfile,
          };
          await notifyExtensions(current, diff);
        }
        return;
      }
      if (lastBlocked !== undefined) {
        configLogger.info('Reconfigure allowed by maintenance sensor', { reason: decision.reason });
      }
      lastBlocked = undefined;
    }
    reconfiguring = true;
    const started = performance.now();
    try {
      const moduleDiff = { ...diff.modules, config: next };
      if (reconciler) {
        try {
          await reconciler.prepare(moduleDiff, lifetime.signal);
        } catch (error) {
          configLogger.error('reconfiguration aborted because modules or packages could not be prepared', {
            error: errorMessage(error),
          });
          return;
        }
      }
      if (cache && rawForCache) {
        await cache.write(rawForCache).catch((error: unknown) => {
          configLogger.warn('could not write the config cache', {
            path: cache.path,
            error: errorMessage(error),
          });
        });
      }
      configStatus = { revision: next.revision, lastUpdated: clock.now() };
      await manager.apply(
        [...next.components, ...next.services],
        diff.resources,
        next.revision,
        lifetime.signal,
      );
      if (reconciler) {
        const { rebuild } = await reconciler.apply(moduleDiff, lifetime.signal);
        manager.markForRebuild(rebuild);
      }
      current = next;
      appliedOnce = true;
      const report = await manager.completePass(lifetime.signal);
      configLogger.info(initial ? 'initial configuration applied' : 'configuration applied', {
        revision: next.revision,
        built: report.built.length,
        failed: report.failed.length,
        duration_ms: Math.round(performance.now() - started),
      });
      if (report.failed.length > 0) {
        logger.warn('The following errors were gathered during reconfiguration', {
          errors: report.failed.map((f) => `${f.key}: ${f.error}`),
        });
      }
      await notifyExtensions(next, diff);
    } finally {
      reconfiguring = false;
      if (manager.needsWork()) scheduleRetry(retryIntervalMs);
    }
  };

  const notifyExtensions = async (config: MachineConfig, diff: ConfigDiff) => {
    for (const extension of extensions) {
      if (!extension.configApplied) continue;
      try {
        await extension.configApplied(config, diff, lifetime.signal);
      } catch (error) {
        logger.error('extension failed to apply the config', {
          extension: extension.name,
          error: errorMessage(error),
        });
      }
    }
  };

  /** Parses and applies config JSON; a bad config is logged with its field path and dropped. */
  const deliver = (json: JsonObject, source: 'local' | 'cloud', rawForCache?: JsonObject): Promise<boolean> =>
    queue(async () => {
      if (lifetime.signal.aborted) return false;
      let config: MachineConfig;
      try {
        config = processConfigJson(json, source, registry);
      } catch (error) {
        configLogger.error(
          'reconfiguration aborted: invalid configuration; the previous configuration keeps running',
          {
            error: errorMessage(error),
          },
        );
        return false;
      }
      const initial = !appliedOnce;
      try {
        await applyConfig(config, initial, rawForCache);
      } catch (error) {
        // A bug or an aborted pass: log it, keep serving, and let the retry pass pick up the rest.
        if (!lifetime.signal.aborted) logger.error('reconfiguration failed', { error: errorMessage(error) });
        scheduleRetry(retryIntervalMs);
      }
      if (initial && appliedOnce) resolveReady();
      return appliedOnce;
    });

  const host: MachineHost = {
    options,
    logger,
    clock,
    registry,
    resources: manager.lookup,
    cloud: connection,
    currentConfig: () => current,
    status: (): MachineStatus => ({
      state: appliedOnce ? 'running' : 'initializing',
      config: configStatus,
      resources: manager.statuses(),
    }),
    cloudMetadata: () => ({
      primaryOrgId: current.cloud?.primaryOrgId ?? '',
      locationId: current.cloud?.locationId ?? '',
      machineId: current.cloud?.machineId ?? '',
      machinePartId: current.cloud?.id ?? '',
    }),
    async restartStatus(signal) {
      if (reconfiguring) return { restartAllowed: false, doesNotHandleNeedsRestart: true };
      const decision = await checkMaintenanceWindow(
        current.maintenance,
        manager.lookup,
        configLogger,
        signal,
      );
      return { restartAllowed: !reconfiguring && decision.allowed, doesNotHandleNeedsRestart: true };
    },
    stopAll: (signal) => manager.stopAll(signal),
    requestShutdown: (reason) => void stop(reason),
    requestRebuild(names) {
      manager.markForRebuild(names);
      scheduleRetry(0);
    },
    requestReconfigure: () => scheduleRetry(0),
    // ms-modules: RestartModule, serialized with reconfigure passes.
    ...(reconciler?.restart
      ? {
          restartModule: (target, signal) =>
            queue(async () => {
              const restarted = await reconciler.restart?.(target, signal);
              manager.markForRebuild(restarted?.rebuild ?? []);
              scheduleRetry(0);
            }),
        }
      : {}),
    version: () => ({ version: machineServerVersion, gitRevision: gitRevision(options.env), apiVersion }),
  };

  // Background loops.
  let fileWatcher: ConfigFileWatcher | undefined;
  let stream: MachineConnectionStream | undefined;
  let restartPoller: NeedsRestartPoller | undefined;
  let wakePoll: (() => void) | undefined;
  let pollLoop: Promise<void> = Promise.resolve();

  const fetchAndDeliver = async (timeoutMs: number): Promise<'applied' | 'rejected' | 'failed'> => {
    if (!connection) return 'failed';
    try {
      const json = await fetchCloudConfig(connection, timeoutMs, gitRevision(options.env), lifetime.signal);
      const merged = mergeLocalCloudFields(json, localJson);
      return (await deliver(merged, 'cloud', json)) ? 'applied' : 'rejected';
    } catch (error) {
      if (lifetime.signal.aborted) return 'failed';
      const malformed = error instanceof CloudConfigError && error.kind === 'malformed';
      configLogger[malformed || !appliedOnce ? 'error' : 'debug'](
        'error reading the configuration from the cloud',
        {
          error: errorMessage(error),
        },
      );
      return malformed ? 'rejected' : 'failed';
    }
  };

  const readTimeoutMs = (initial: boolean, cacheExists: boolean) => {
    const configured = options.env.VIAM_CONFIG_READ_TIMEOUT;
    if (configured) return parseGoDurationMs(configured, 'VIAM_CONFIG_READ_TIMEOUT');
    if (options.env.SOCKS_PROXY) return 60_000;
    return initial && cacheExists ? 1000 : 15_000;
  };

  const startCloudLoops = (conn: CloudConnection) => {
    const intervalMs = cloudSection?.refreshIntervalMs ?? 15_000;
    pollLoop = (async () => {
      let waitMs = Math.max(100, Math.floor(intervalMs / 5));
      while (!lifetime.signal.aborted) {
        const wake = new AbortController();
        wakePoll = () => wake.abort();
        await sleep(waitMs, AbortSignal.any([lifetime.signal, wake.signal]));
        wakePoll = undefined;
        if (lifetime.signal.aborted) break;
        await fetchAndDeliver(readTimeoutMs(false, false));
        waitMs = intervalMs;
      }
    })();
    // MCLOUD_MACHINE_CONNECTION=off: poll only (tests and the push-vs-poll benchmark).
    if (options.env.MCLOUD_MACHINE_CONNECTION === 'off') stream = undefined;
    else
      stream = startMachineConnectionStream({
        connection: conn,
        logger: logger.child('networking').child('app_connection'),
        currentRevision: () => current.revision,
        onConfigChanged: (revision) => {
          configLogger.debug('the cloud pushed a configuration change', { revision });
          wakePoll?.();
        },
        onRestartRequested: () => restartPoller?.checkNow(),
      });
    if (!options.env.VIAM_AGENT_HANDLES_NEEDS_RESTART_CHECKING) {
      restartPoller = startNeedsRestartPoller(conn, logger.child('config'), () =>
        host.requestShutdown('app_restart'),
      );
    }
  };

  let stopping: Promise<void> | undefined;
  const stop = (reason = 'shutdown'): Promise<void> => {
    stopping ??= (async () => {
      resolveStopping(reason);
      logger.info('shutting down', { reason });
      lifetime.abort();
      clearInterval(keepAlive);
      clearTimeout(retryTimer);
      fileWatcher?.close();
      restartPoller?.stop();
      wakePoll?.();
      await pollLoop;
      await queue(async () => {
        for (const extension of [...extensions].reverse()) {
          if (!extension.stop) continue;
          const result = await withDeadline(
            30_000,
            undefined,
            (signal) => extension.stop?.(signal) ?? Promise.resolve(),
          );
          if (result.kind !== 'done') {
            logger.warn('extension did not stop cleanly', {
              extension: extension.name,
              error: result.kind === 'failed' ? errorMessage(result.error) : 'deadline of 30 s exceeded',
            });
          }
        }
        const order = await manager.closeAll(AbortSignal.timeout(60_000));
        logger.debug('resources closed', { order });
        if (reconciler) await reconciler.close(AbortSignal.timeout(30_000)).catch(() => {});
      });
      logger.info('shutdown complete', { reason });
      // Logging flushes its cloud upload through the connection, so it closes first. The live stream
      // ends after it: its end is the machine's goodbye (the part goes offline at once), and a log upload
      // after the goodbye would count as contact and mark the part online again.
      await logging.close(AbortSignal.timeout(5000)).catch(() => {});
      await stream?.stop();
      connection?.close();
      resolveStopped(reason);
    })();
    return stopping;
  };

  // Start-up (A0.10–A0.16).
  logger.info('machine-server starting', {
    version: machineServerVersion,
    git_rev: gitRevision(options.env) || 'unknown',
    config: options.configPath,
    cloud_managed: connection !== undefined,
  });
  if (options.webrtc) {
    logger.info(
      '-webrtc: WebRTC is not implemented yet; clients connect directly (gRPC / gRPC-web on the bind address)',
    );
  }
  for (const extension of extensions) {
    await extension.start?.(host, lifetime.signal);
  }

  if (connection && cache) {
    const cacheExists = await cache.exists();
    const first = await fetchAndDeliver(readTimeoutMs(true, cacheExists));
    if (first !== 'applied' && cacheExists && !appliedOnce) {
      const cached = await cache.read().catch(() => undefined);
      if (cached) {
        configLogger.warn('could not apply new cloud config; using cached version', {
          cache: cache.path,
          cached_at: cached.modifiedAt.toISOString(),
        });
        const ok = await deliver(mergeLocalCloudFields(cached.json, localJson), 'cloud');
        if (!ok) {
          configLogger.error('the cached configuration is invalid; deleting it', { cache: cache.path });
          await cache.remove();
        }
      } else {
        await cache.remove();
      }
    }
    startCloudLoops(connection);
  } else {
    // Watch before applying, so an edit made while the first pass runs is not missed (the watcher
    // compares bytes with the text read at start-up and checks once right away).
    fileWatcher = watchConfigFile(options.configPath, localText, (text) => {
      configLogger.info('On-disk config file changed. Reloading the config file.');
      let json: JsonObject;
      try {
        json = JSON.parse(substituteEnv(text, options.env)) as JsonObject;
      } catch (error) {
        configLogger.error('reconfiguration aborted: the config file is not valid JSON', {
          error: errorMessage(error),
        });
        return;
      }
      void deliver(json, 'local');
    });
    await deliver(localJson, 'local');
    if (!appliedOnce) {
      // The file did not validate: run with nothing until it is fixed.
      configLogger.error('the configuration file is invalid; waiting for it to be fixed', {
        config: options.configPath,
      });
    }
  }

  void ready.then(() => {
    const names = manager.statuses().map((status) => formatResourceName(status.name));
    logger.info('machine-server ready', { resources: names.length });
  });
  return { host, ready, stopping: stoppingPromise, stopped, stop };

  function checkPlaintextCredentials(appAddress: string, allowed: boolean) {
    const url = new URL(appAddress);
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    if (url.protocol === 'http:' && !loopback && !allowed) {
      throw invalidConfig(
        'cloud.app_address',
        'uses plaintext http to a non-local host; pass -allow-insecure-creds to send the machine credentials over it',
        appAddress,
      );
    }
  }
}

export type { MachineServerOptions };
