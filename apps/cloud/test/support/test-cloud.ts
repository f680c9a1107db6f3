import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BootstrapFile } from '../../src/bootstrap.ts';
import { type RunningCloud, startCloud } from '../../src/cloud-app.ts';
import { type CloudConfig, loadCloudConfig } from '../../src/config/cloud-config.ts';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { createTestDatabase } from './test-database.ts';

export interface TestCloud {
  cloud: RunningCloud;
  url: string;
  bootstrap: BootstrapFile;
  dataDir: string;
  stop(): Promise<void>;
}

/** A real cloud on a random port with a fresh database and data directory. */
export async function startTestCloud(
  options: { clock?: Clock; configure?: (config: CloudConfig) => CloudConfig } = {},
): Promise<TestCloud> {
  const database = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-test-'));
  const base = loadCloudConfig(['--port', '0', '--data-dir', dataDir, '--database-url', database.url], {});
  const config = options.configure ? options.configure(base) : base;
  const cloud = await startCloud(config, options.clock ? { clock: options.clock } : {});
  if (!cloud.bootstrap) throw new Error('a fresh test database must bootstrap');
  return {
    cloud,
    url: cloud.url,
    bootstrap: cloud.bootstrap,
    dataDir,
    async stop() {
      await cloud.stop();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Another replica of `primary`: a second cloud process-in-process on the SAME database (its own data
 * directory, port, job workers and timers). Stop replicas before the primary (which drops the database).
 */
export async function startTestCloudReplica(
  primary: TestCloud,
  options: { clock?: Clock; configure?: (config: CloudConfig) => CloudConfig } = {},
): Promise<TestCloud> {
  const databaseUrl = primary.cloud.deps.config.databaseUrl;
  if (!databaseUrl) throw new Error('the primary test cloud has no database URL');
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-test-'));
  const base = loadCloudConfig(['--port', '0', '--data-dir', dataDir, '--database-url', databaseUrl], {});
  const config = options.configure ? options.configure(base) : base;
  const cloud = await startCloud(config, options.clock ? { clock: options.clock } : {});
  return {
    cloud,
    url: cloud.url,
    bootstrap: primary.bootstrap,
    dataDir,
    async stop() {
      await cloud.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
