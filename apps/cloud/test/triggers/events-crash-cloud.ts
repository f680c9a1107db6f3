/**
 * Child-process entry of events-crash.test.ts: a cloud on an external test database (so SIGKILL kills
 * only this Node process, like a crashed replica; PostgreSQL survives). argv: dataDir, databaseUrl,
 * `deliver` | `hold`. With `hold` the job queue is stopped right after start (concurrency 0): events are
 * recorded, nothing is sent. Reports its address over IPC.
 */
import { startCloud } from '../../src/cloud-app.ts';
import { loadCloudConfig } from '../../src/config/cloud-config.ts';

const [dataDir, databaseUrl, mode] = process.argv.slice(2);
if (!dataDir || !databaseUrl || !process.send) throw new Error('usage: spawned by events-crash.test.ts');
const base = loadCloudConfig(['--port', '0', '--data-dir', dataDir, '--database-url', databaseUrl], {});
// Fast retries when the delivery side has them (a receiver that was down comes back quickly).
const config = {
  ...base,
  triggerDelivery: { ...base.triggerDelivery, retryBaseDelayMs: 200, retryMaxDelayMs: 1_000 },
};
const cloud = await startCloud(config, {
  logger: { info() {}, error: (message, error) => console.error(`[crash-cloud] ${message}`, error) },
});
if (mode === 'hold') await cloud.deps.jobs.stop();
process.send({ type: 'ready', url: cloud.url, bootstrap: cloud.bootstrap });
process.on('message', (message: { type?: string }) => {
  if (message.type === 'stop')
    cloud.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
});
process.on('disconnect', () => {
  cloud.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
