import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../apps/cloud/src/infra/postgres/embedded-postgres-server.ts';

/**
 * The whole suite: one real PostgreSQL for the run (the embedded one, or TEST_DATABASE_URL's server),
 * every test file then creates its own fresh database on it.
 */
const patterns = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['apps/*/src/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'packages/*/test/**/*.test.ts'];

let stopPostgres = async () => {};
let adminUrl = process.env.TEST_DATABASE_URL;
let scratch: string | undefined;
if (!adminUrl) {
  scratch = await mkdtemp(path.join(tmpdir(), 'mcloud-test-pg-'));
  const postgres = await startEmbeddedPostgres({ dataDir: scratch, databaseName: 'mcloud_test_admin' });
  adminUrl = postgres.url;
  stopPostgres = postgres.stop;
}

const code = await new Promise<number>((resolve) => {
  const child = spawn(
    process.execPath,
    ['--test', '--test-concurrency=2', '--test-timeout=300000', ...patterns],
    {
      stdio: 'inherit',
      env: { ...process.env, MCLOUD_TEST_ADMIN_URL: adminUrl },
    },
  );
  child.on('exit', (exitCode) => resolve(exitCode ?? 1));
});
await stopPostgres();
if (scratch) await rm(scratch, { recursive: true, force: true });
process.exitCode = code;
