import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface S3TestServer {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;

/**
 * Starts a real S3-compatible server for tests: s3rver in a child process (so its memory and CPU do
 * not disturb the test process), behind a front door that verifies AWS SigV4 signatures with
 * per-server random credentials, on a random free port with a temporary directory and one fresh
 * bucket. Path-style addressing: give clients `forcePathStyle: true`.
 */
export async function startS3TestServer(): Promise<S3TestServer> {
  const directory = await mkdtemp(join(tmpdir(), 'mcloud-s3-test-'));
  const config = {
    directory,
    bucket: `mcloud-test-${randomBytes(4).toString('hex')}`,
    region: 'us-east-1',
    accessKeyId: `MCLOUDTEST${randomBytes(5).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  };
  const child = spawn(
    process.execPath,
    [new URL('./s3-test-server-process.ts', import.meta.url).pathname, JSON.stringify(config)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let port: number;
  try {
    port = await readReadyPort(child);
  } catch (error) {
    child.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw error;
  }

  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: config.region,
    bucket: config.bucket,
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    stop() {
      stopped ??= (async () => {
        await stopChild(child);
        await rm(directory, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

function readReadyPort(child: ChildProcess): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const timer = setTimeout(
      () => reject(new Error('S3 test server did not become ready in time')),
      READY_TIMEOUT_MS,
    );
    lines.once('line', (line) => {
      clearTimeout(timer);
      lines.close();
      try {
        resolve((JSON.parse(line) as { port: number }).port);
      } catch (error) {
        reject(new Error(`S3 test server printed an unexpected ready line: ${line}`, { cause: error }));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`S3 test server exited before ready (code ${code}, signal ${signal})`));
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
