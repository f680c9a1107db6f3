import type { CloudConfig } from './config/cloud-config.ts';
import type { Authenticator } from './domain/auth/authenticator.ts';
import type { Clock } from './domain/shared/clock.ts';
import type { BlobStore } from './infra/blobs/index.ts';
import type { Database } from './infra/postgres/database.ts';

/** What request handlers may use: the composition root builds it once per process. */
export interface CloudDeps {
  config: CloudConfig;
  db: Database;
  blobs: BlobStore;
  authenticator: Authenticator;
  clock: Clock;
}
