import type { ServerResponse } from 'node:http';
import { compressionBrotli, connectNodeAdapter } from '@connectrpc/connect-node';
import { applyCors, createInlineGzip, listen } from '@mcloud/rpc-server';
import { createAuthInterceptor, createErrorInterceptor } from './api/interceptors.ts';
import { registerRoutes } from './api/routes.ts';
import { type BootstrapFile, bootstrapIfEmpty } from './bootstrap.ts';
import type { CloudDeps } from './cloud-deps.ts';
import type { CloudConfig } from './config/cloud-config.ts';
import { createAuthenticator } from './domain/auth/authenticator.ts';
import { createDatabaseUserWatchdog } from './domain/data/database-users/database-user-watchdog.ts';
import {
  createHotStorageExpiry,
  type HotStorageExpiry,
} from './domain/data/hot-storage/hot-storage-expiry.ts';
import { enqueueReadingRollups, registerReadingRollupJob } from './domain/data/rollups/reading-rollup-job.ts';
import type { MachineEventObserver } from './domain/machines/machine-events.ts';
import { createMachineRuntime } from './domain/machines/machine-runtime.ts';
import { enqueuePipelineRun, registerPipelineRunHandler } from './domain/pipelines/pipeline-jobs.ts';
import { createPipelineSchedulerLoop } from './domain/pipelines/pipeline-scheduler-loop.ts';
import { type Clock, systemClock } from './domain/shared/clock.ts';
import {
  createTriggerDeliveryRuntime,
  type TriggerDeliveryRuntime,
} from './domain/triggers/delivery/trigger-delivery-runtime.ts';
import { createMachineEventTriggers } from './domain/triggers/machine-event-triggers.ts';
import { createPartTriggersCache } from './domain/triggers/part-triggers.ts';
import { triggerDeliveryJob } from './domain/triggers/trigger-delivery.ts';
import { createUploadTriggers } from './domain/triggers/upload-triggers.ts';
import { handleHttpRoutes } from './http/http-routes.ts';
import { createBlobStore } from './infra/blobs/index.ts';
import { createJobQueue, type JobQueue } from './infra/jobs/job-queue.ts';
import {
  createNotificationListener,
  type NotificationListener,
} from './infra/postgres/notification-listener.ts';
import { openDatabase } from './infra/postgres/open-database.ts';

export interface CloudLogger {
  info(message: string): void;
  error(message: string, error?: unknown): void;
}

export interface RunningCloud {
  url: string;
  port: number;
  deps: CloudDeps;
  bootstrap: BootstrapFile | undefined;
  /** Graceful stop: stop accepting, finish in-flight calls until the deadline, close storage. */
  stop(): Promise<void>;
}

export const silentLogger: CloudLogger = { info() {}, error() {} };

/** The composition root: storage, domain services, the API router and the listening socket. */
export async function startCloud(
  config: CloudConfig,
  options: { clock?: Clock; logger?: CloudLogger } = {},
): Promise<RunningCloud> {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const storage = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    listenHost: config.databaseListenHost,
  });
  const blobs = createBlobStore(config.blobs);
  let notifications: NotificationListener | undefined;
  let jobs: JobQueue | undefined;
  let triggerDelivery: TriggerDeliveryRuntime | undefined;
  let hotStorageExpiry: HotStorageExpiry | undefined;
  // Ends BI sessions that hold readings past their timeouts (they would block new partitions).
  const databaseUserWatchdog = createDatabaseUserWatchdog({
    db: storage.db,
    intervalMs: 10_000,
    onError: (error) => logger.error('database user watchdog', error),
  });
  try {
    const authenticator = await createAuthenticator(storage.db, clock);
    const machineEventObservers: MachineEventObserver[] = [];
    notifications = createNotificationListener(storage.url, (error) => logger.error('notifications', error));
    // Triggers: events recorded as deliveries inside the transaction that commits them.
    const triggerCache = createPartTriggersCache({
      notifications,
      clock,
      onError: (error) => logger.error('triggers', error),
    });
    machineEventObservers.push(createMachineEventTriggers(triggerCache, clock));
    const machines = createMachineRuntime({
      db: storage.db,
      clock,
      notifications,
      observers: machineEventObservers,
      settings: () => config.machineConnection,
      offlineAfterMs: () => config.partOfflineAfterMs,
      onError: (error) => logger.error('machine connection', error),
    });
    const deps: CloudDeps = {
      config,
      db: storage.db,
      blobs,
      authenticator,
      clock,
      machines,
      machineEventObservers,
      uploadObservers: [createUploadTriggers(storage.db, triggerCache, clock)],
      jobs: createJobQueue({
        connectionString: storage.url,
        onError: (message, error) => logger.error(message, error),
      }),
      hotStorageExpiry: createHotStorageExpiry({
        db: storage.db,
        clock,
        intervalMs: config.hotStorageExpiryIntervalMs,
        onError: (error) => logger.error('hot storage expiry', error),
      }),
    };
    hotStorageExpiry = deps.hotStorageExpiry;
    jobs = deps.jobs;
    triggerDelivery = createTriggerDeliveryRuntime({
      db: storage.db,
      clock,
      logs: machines.logs,
      smtp: config.smtp,
      settings: () => deps.config.triggerDelivery,
      onError: (message, error) => logger.error(message, error),
    });
    // Job handlers are registered here, before the queue starts (every replica registers the same ones).
    registerPipelineRunHandler(
      jobs,
      { db: storage.db, clock, runLimits: config.pipelines.runLimits },
      { maxConcurrentRuns: config.pipelines.maxConcurrentRuns, onError: (message) => logger.error(message) },
    );
    jobs.register(triggerDeliveryJob, triggerDelivery.handler);
    registerReadingRollupJob(jobs, storage.db, {
      onError: (error) => logger.error('reading rollups', error),
    });
    await jobs.start();
    await enqueueReadingRollups(storage.db);
    const pipelineScheduler = createPipelineSchedulerLoop({
      deps: {
        db: storage.db,
        clock,
        schedulerSettings: config.pipelines.scheduler,
        enqueueRun: enqueuePipelineRun,
      },
      intervalMs: config.pipelines.schedulerIntervalMs,
      onError: (error) => logger.error('data pipeline scheduler pass failed', error),
    });
    const connectHandler = connectNodeAdapter({
      routes: (router) => registerRoutes(router, deps),
      interceptors: [
        createErrorInterceptor((error, procedure) => logger.error(`${procedure} failed`, error)),
        createAuthInterceptor(authenticator),
      ],
      readMaxBytes: config.maxMessageBytes,
      writeMaxBytes: config.maxMessageBytes,
      // Small messages are (de)compressed inline: thread-pool hand-offs cost more latency than gzip itself.
      acceptCompression: [createInlineGzip(), compressionBrotli],
      // Plain HTTP routes get the real Node response object (Connect's type hides `write`).
      fallback: (req, res) => handleHttpRoutes(deps, req, res as unknown as ServerResponse),
    });
    const listener = await listen({
      host: config.host,
      port: config.port,
      tls: config.tls,
      handler: (req, res) => {
        if (applyCors(req, res)) return;
        connectHandler(req, res);
      },
    });
    const url = config.port === 0 ? config.publicUrl.replace(/:0$/, `:${listener.port}`) : config.publicUrl;
    // Handlers read the config at call time, so they see the real port when it was chosen by the OS.
    deps.config = { ...config, publicUrl: url };
    const bootstrap = await bootstrapIfEmpty(storage.db, config.dataDir, url);
    machines.start();
    pipelineScheduler.start();
    triggerDelivery.start();
    deps.hotStorageExpiry.start();
    databaseUserWatchdog.start();
    return {
      url,
      port: listener.port,
      deps,
      bootstrap,
      async stop() {
        // Live streams and log tails end first: they would otherwise hold the listener until its deadline.
        await machines.stop();
        await pipelineScheduler.stop();
        await hotStorageExpiry?.stop();
        await databaseUserWatchdog.stop();
        await listener.close(config.shutdownTimeoutMs);
        await jobs?.stop();
        await triggerDelivery?.stop();
        await notifications?.close();
        await blobs.close();
        await storage.close();
      },
    };
  } catch (error) {
    await hotStorageExpiry?.stop();
    await databaseUserWatchdog.stop();
    await jobs?.stop();
    await triggerDelivery?.stop();
    await notifications?.close();
    await blobs.close();
    await storage.close();
    throw error;
  }
}
