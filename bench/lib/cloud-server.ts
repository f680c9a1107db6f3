/**
 * Child-process entry: starts a cloud (embedded PostgreSQL in the data directory given as argv[2],
 * port 0) and reports its address over IPC. Stops on the `stop` message so `--cpu-prof` profiles
 * are written on a clean exit.
 */
import type pg from 'pg';
import { startCloud } from '../../apps/cloud/src/cloud-app.ts';
import { loadCloudConfig } from '../../apps/cloud/src/config/cloud-config.ts';
import { applyServerExperiments } from './experiments.ts';

const dataDir = process.argv[2];
if (!dataDir || !process.send) throw new Error('usage: spawned by bench/lib/cloud-process.ts');

applyServerExperiments((process.env.BENCH_SERVER_EXPERIMENTS ?? '').split(',').filter(Boolean));
// BENCH_DATABASE_URL: serve another cloud's database (a second replica) instead of starting PostgreSQL.
const externalDatabase = process.env.BENCH_DATABASE_URL;
const config = loadCloudConfig(
  ['--port', '0', '--data-dir', dataDir, ...(externalDatabase ? ['--database-url', externalDatabase] : [])],
  {},
);
const cloud = await startCloud(config, {
  logger: { info() {}, error: (message, error) => console.error(`[cloud] ${message}`, error) },
});
const databaseUrl = (cloud.deps.db as pg.Pool).options.connectionString;
process.send({ type: 'ready', url: cloud.url, bootstrap: cloud.bootstrap, databaseUrl });
let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  cloud.stop().then(
    () => process.exit(0),
    (error) => {
      console.error('[cloud] stop failed', error);
      process.exit(1);
    },
  );
}
process.on('message', (message: { type?: string }) => {
  if (message.type === 'stop') stop();
  if (message.type === 'gc') {
    // Only with --expose-gc (streaming-upload): tells retained memory from garbage not yet collected.
    (globalThis as { gc?: () => void }).gc?.();
    process.send?.({ type: 'gc-done', memory: process.memoryUsage() });
  }
});
// The benchmark died: do not leave a cloud (and its PostgreSQL) behind.
process.on('disconnect', stop);
