import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { authenticate } from '../support/connect-clients.ts';

const mcloud = path.resolve(import.meta.dirname, '../../src/bin/mcloud.ts');
let dataDir: string;
let server: ChildProcess;
let output = '';

// The zero-setup path for real: `mcloud serve` starts its own embedded PostgreSQL in the data dir.
before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-cli-'));
  server = spawn(process.execPath, [mcloud, 'serve', '--data-dir', dataDir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  server.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const deadline = Date.now() + 120_000;
  while (!/api_key\s+\S+/.test(output)) {
    if (Date.now() > deadline || server.exitCode !== null)
      throw new Error(`server did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});
after(async () => {
  if (server.exitCode === null) server.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

test('first start prints the owner key and writes bootstrap.json readable by the owner only', async () => {
  const file = path.join(dataDir, 'bootstrap.json');
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  const bootstrap = JSON.parse(await readFile(file, 'utf8'));
  assert.deepEqual(Object.keys(bootstrap).sort(), [
    'api_key',
    'api_key_id',
    'location_id',
    'organization_id',
    'url',
  ]);
  assert.ok(output.includes(bootstrap.api_key_id) && output.includes(bootstrap.organization_id));
  const token = await authenticate(bootstrap.url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key });
  assert.ok(token.length > 20);
});

test('admin create-org works while the server runs and yields a working owner key', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [
    mcloud,
    'admin',
    'create-org',
    '--data-dir',
    dataDir,
    '--name',
    'acme',
    '--json',
  ]);
  const created = JSON.parse(stdout);
  const bootstrap = JSON.parse(await readFile(path.join(dataDir, 'bootstrap.json'), 'utf8'));
  assert.equal(created.url, bootstrap.url);
  assert.notEqual(created.organization_id, bootstrap.organization_id);
  const token = await authenticate(created.url, { keyId: created.api_key_id, key: created.api_key });
  assert.ok(token.length > 20);
});

test('admin create-org without a name fails with a clear message', async () => {
  await assert.rejects(
    promisify(execFile)(process.execPath, [mcloud, 'admin', 'create-org', '--data-dir', dataDir]),
    (error: { code: number; stderr: string }) =>
      error.code === 2 && error.stderr.includes('--name is required'),
  );
});

test('SIGTERM stops the server gracefully, with its PostgreSQL', async () => {
  server.kill('SIGTERM');
  const [code] = await once(server, 'exit');
  assert.equal(code, 0);
  await assert.rejects(stat(path.join(dataDir, 'postgres', 'postmaster.pid')));
});
