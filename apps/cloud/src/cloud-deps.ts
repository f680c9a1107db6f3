import type { CloudConfig } from './config/cloud-config.ts';
import type { Authenticator } from './domain/auth/authenticator.ts';
import type { HotStorageExpiry } from './domain/data/hot-storage/hot-storage-expiry.ts';
import type { UploadObserver } from './domain/data/ingest/upload-observer.ts';
import type { MachineEventObserver } from './domain/machines/machine-events.ts';
import type { MachineRuntime } from './domain/machines/machine-runtime.ts';
import type { Clock } from './domain/shared/clock.ts';
import type { BlobStore } from './infra/blobs/index.ts';
import type { JobQueue } from './infra/jobs/job-queue.ts';
import type { Database } from './infra/postgres/database.ts';

/** What request handlers may use: the composition root builds it once per process. */
export interface CloudDeps {
  config: CloudConfig;
  db: Database;
  blobs: BlobStore;
  authenticator: Authenticator;
  clock: Clock;
  /** Machine connections: live status, live streams, logs (see domain/machines/machine-runtime.ts). */
  machines: MachineRuntime;
  /**
   * Run inside the transaction of every part online/offline transition and every stored log batch
   * (domain/machines/machine-events.ts). Push observers here at composition time (e.g. triggers).
   */
  machineEventObservers: MachineEventObserver[];
  /**
   * Asked about every data upload before its transaction; the step they return runs inside it, right
   * before COMMIT, when the upload was stored (domain/data/ingest/upload-observer.ts; triggers).
   */
  uploadObservers: UploadObserver[];
  /**
   * The Postgres-backed job queue (infra/jobs/job-queue.ts): enqueue with `addJob(tx, ...)` inside your
   * transaction; handlers are registered in cloud-app.ts before `jobs.start()`.
   */
  jobs: JobQueue;
  /** Reclaims expired hot-storage rows every `config.hotStorageExpiryIntervalMs`, one replica at a time. */
  hotStorageExpiry: HotStorageExpiry;
}
