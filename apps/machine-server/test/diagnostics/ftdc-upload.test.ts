/**
 * FTDC end to end (machine-runtime.md A6): a cloud-managed machine-server process WITHOUT a data manager
 * samples its metrics into `$VIAM_HOME/diagnostics.data/<part id>/machine-server-<UTC time>.ftdc`,
 * rolls files over at a (tiny, injected) size, and uploads every completed file to a real cloud with
 * DataSync FileUpload; each file is deleted locally once the cloud stored it, the one being written
 * stays. The stored bytes decode as FTDC with the process metrics. While the cloud cannot be reached,
 * nothing is deleted.
 */
import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { before, test } from 'node:test';
import { binaryItems } from '../data/cloud-fixtures.ts';
import { waitFor } from '../data/data-fixtures.ts';
import type { CloudPart } from '../support/cloud-machine-fixtures.ts';
import { useCloudForMachines } from '../support/cloud-machine-harness.ts';
import { decodeFtdc } from './ftdc-decode.ts';

const namePattern = /^machine-server-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.ftdc$/;

/** Samples every 50 ms into files of at most 1500 bytes, completed ones uploaded every 200 ms. */
const tinyFtdcFiles = {
  MCLOUD_FTDC_INTERVAL_MS: '50',
  MCLOUD_FTDC_MAX_FILE_BYTES: '1500',
  MCLOUD_FTDC_UPLOAD_INTERVAL_MS: '200',
};

const harness = useCloudForMachines();
let part: CloudPart;

before(async () => {
  part = await harness.createPart('ftdc-machine', {
    components: [{ name: 'thermo', api: 'rdk:component:sensor', model: 'fake' }],
  });
});

test('completed FTDC files reach the cloud through FileUpload and are removed locally', async () => {
  const machine = await harness.startPartMachine(part, {
    args: ['-ftdc', '-disable-mdns'],
    env: tinyFtdcFiles,
  });
  await machine.waitForLine(/initial configuration applied/, 30_000);
  const directory = path.join(machine.viamHome, 'diagnostics.data', part.partId);

  const ftdcItems = async () =>
    (await binaryItems(part.owner, part.partId, '')).filter((item) => item.fileName.endsWith('.ftdc'));
  const stored = await waitFor(
    async () => {
      const items = await ftdcItems();
      return items.length >= 3 ? items : undefined;
    },
    20_000,
    'three uploaded FTDC files',
  );
  const storedNames = stored.map((item) => path.basename(item.fileName));
  for (const item of stored) {
    assert.match(path.basename(item.fileName), namePattern);
    assert.equal(path.dirname(item.fileName), directory, 'file_name is the absolute path on the machine');
    assert.equal(item.fileExt, '.ftdc');
    const samples = decodeFtdc(item.binary);
    assert.ok(samples.length >= 2, `${item.fileName} holds ${samples.length} samples`);
    const last = samples.at(-1);
    assert.ok((last?.metrics['process.rss_bytes'] ?? 0) > 10_000_000, 'rss is sampled');
    assert.equal(last?.metrics['resources.ready'], 1, 'the one sensor is ready');
    // Roll-over: a file is closed once it reached the size (plus at most one second of samples).
    assert.ok(item.binary.length >= 1500, `${item.fileName} has ${item.binary.length} bytes`);
  }
  assert.equal(new Set(storedNames).size, storedNames.length, 'each file is stored once');

  // Deleted after acknowledgement: no uploaded file is left; what stays is newer than all of them.
  const local = await waitFor(
    async () => {
      const names = (await readdir(directory)).filter((name) => name.endsWith('.ftdc'));
      return names.every((name) => !storedNames.includes(name)) ? names : undefined;
    },
    10_000,
    'uploaded files to be removed locally',
  );
  assert.ok(local.length >= 1 && local.length <= 2, `left locally: ${local.join(', ')}`);
  const newestStored = [...storedNames].sort().at(-1) as string;
  for (const name of local) assert.ok(name > newestStored, `${name} is newer than ${newestStored}`);
  assert.equal((await stat(directory)).mode & 0o777, 0o755);
  assert.equal((await stat(path.join(directory, local[0] as string))).mode & 0o777, 0o644);

  assert.equal(await machine.stop(), 0);
  assert.ok(!machine.lines.some((line) => /FTDC write failed|upload failed/.test(line)));
});

test('without an acknowledgement nothing is deleted: an unreachable cloud leaves every file in place', async () => {
  // A port that refuses every connection: the machine cannot fetch its config nor upload.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const offline = await harness.startMachine({
    config: { cloud: { app_address: `http://127.0.0.1:${port}`, id: part.partId, secret: part.secret } },
    args: ['-ftdc', '-disable-mdns'],
    env: tinyFtdcFiles,
  });
  const directory = path.join(offline.viamHome, 'diagnostics.data', part.partId);
  const seen = new Set<string>();
  await waitFor(
    async () => {
      for (const name of await readdir(directory).catch(() => [] as string[])) seen.add(name);
      return seen.size >= 4;
    },
    20_000,
    'four FTDC files',
  );
  const left = await readdir(directory);
  assert.deepEqual(
    [...seen].filter((name) => !left.includes(name)),
    [],
    'no file disappeared without an acknowledgement',
  );
  assert.equal(await offline.stop(), 0);
});
