/**
 * A module process: serves `viam.module.v1.ModuleService` and the APIs of its models on the address
 * the parent passes (machine-runtime.md A3, appendix §2.2, §5). `runModule` is the whole `main`:
 * parse argv/env, serve, and exit cleanly on SIGTERM/SIGINT/SIGPIPE or when the parent is gone.
 */
import type { ApiDefinition } from './api-definition.ts';
import { genericDefinition } from './apis/generic.ts';
import { sensorDefinition } from './apis/sensor.ts';
import { errorMessage } from './errors.ts';
import { consoleSink, createLogger, type Logger, type LogSink } from './logger.ts';
import type { ModelDefinition } from './model.ts';
import { type ModuleArgs, parseModuleArgs } from './module-args.ts';
import { registerModuleService } from './module-service.ts';
import { connectToParent, type ParentClient } from './parent-client.ts';
import { type SocketServer, startSocketServer } from './socket-server.ts';
import { scheduleStartUpMemoryRelease } from './start-up-memory.ts';

/** A module gives back its start-up memory this long after it serves (start-up-memory.ts). */
const startUpMemoryReleaseDelayMs = 5000;

/** APIs every module can call as dependencies, besides the APIs of its own models. */
export const builtinApis: readonly ApiDefinition[] = [sensorDefinition, genericDefinition];

export interface ModuleOptions {
  readonly models: readonly ModelDefinition[];
  /** Extra APIs whose resources this module's models use as dependencies. */
  readonly apis?: readonly ApiDefinition[];
  /** Parent health check interval; two failed checks in a row end the module. Default 10 s. */
  readonly parentCheckIntervalMs?: number;
}

export interface RunningModule {
  readonly address: string;
  readonly logger: Logger;
  /** Closes every resource (30 s each), flushes logs to the parent, stops serving. */
  stop(): Promise<void>;
  /** Resolves once `stop` completed (from a signal, parent loss or a direct call). */
  readonly stopped: Promise<void>;
}

export async function startModule(options: ModuleOptions, args: ModuleArgs): Promise<RunningModule> {
  let sink: LogSink = consoleSink;
  let parent: ParentClient | undefined;
  const logger = createLogger(args.moduleName, args.logLevel, () => sink);
  let healthTimer: NodeJS.Timeout | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  let stopping: Promise<void> | undefined;
  let server: SocketServer | undefined;

  const watchParent = (client: ParentClient) => {
    let failures = 0;
    healthTimer = setInterval(async () => {
      try {
        await client.resourceNames(AbortSignal.timeout(3000));
        failures = 0;
      } catch (error) {
        failures++;
        if (failures >= 2) {
          sink = consoleSink;
          logger.error('parent connection lost; module stopping', { error: errorMessage(error) });
          void stop();
        }
      }
    }, options.parentCheckIntervalMs ?? 10_000);
    healthTimer.unref();
  };

  let resources: ReturnType<typeof registerModuleService> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      clearInterval(healthTimer);
      await resources?.closeAll(AbortSignal.timeout(30_000));
      await parent?.flush();
      parent?.close();
      await server?.close();
      resolveStopped();
    })();
    return stopping;
  };

  server = await startSocketServer({
    address: args.address,
    routes: (router) => {
      resources = registerModuleService(router, {
        moduleName: args.moduleName,
        models: options.models,
        apis: [...builtinApis, ...(options.apis ?? [])],
        logLevel: args.logLevel,
        logSink: () => sink,
        logger,
        async connectParent(address, signal) {
          if (args.noParent) return undefined;
          parent = await connectToParent(address, args.moduleName, signal);
          const client = parent;
          sink = (record) => client.log(record);
          watchParent(client);
          logger.debug('connected to parent', { address });
          return parent;
        },
      });
    },
  });
  return { address: server.address, logger, stop, stopped };
}

/**
 * The `main` of a module executable. Exits 0 after a clean stop, 1 when start-up fails.
 */
export async function runModule(options: ModuleOptions): Promise<void> {
  let args: ModuleArgs;
  try {
    args = parseModuleArgs(process.argv.slice(2), process.env);
  } catch (error) {
    process.stderr.write(`${errorMessage(error)}\n`);
    process.exit(1);
  }
  let running: RunningModule;
  try {
    running = await startModule(options, args);
  } catch (error) {
    process.stderr.write(`module ${args.moduleName} failed to start: ${errorMessage(error)}\n`);
    process.exit(1);
  }
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGPIPE'] as const) {
    process.once(signal, () => {
      running.logger.info(`${signal} received; stopping`);
      void running.stop();
    });
  }
  // Start-up's young generation back to the system once the module idles (start-up-memory.ts).
  const cancelMemoryRelease = scheduleStartUpMemoryRelease(
    startUpMemoryReleaseDelayMs,
    running.logger,
    'debug',
  );
  await running.stopped;
  cancelMemoryRelease();
  process.exit(0);
}
