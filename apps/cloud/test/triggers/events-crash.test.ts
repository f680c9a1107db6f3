import assert from 'node:assert/strict';
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import pg from 'pg';
import type { BootstrapFile } from '../../src/bootstrap.ts';
import { machineClients, newMachine } from '../machines/machine-fixtures.ts';
import { createAuthedClients } from '../support/connect-clients.ts';
import { createTestDatabase, type TestDatabase } from '../support/test-database.ts';
import {
  logsAndOnlineTriggers,
  ownerSdk,
  setTriggers,
  startWebhookReceiver,
  type WebhookReceiver,
  webhookTrigger,
} from './events-fixtures.ts';

/**
 * Crash test: a cloud in a child process records trigger events for committed uploads, log batches and
 * a status change, and is SIGKILLed before anything was sent (its job queue held). A new cloud process
 * on the same database delivers every notification exactly once.
 */

interface Child {
  process: ChildProcess;
  url: string;
  bootstrap: BootstrapFile | undefined;
}

let database: TestDatabase;
let dataDir: string;
let receiver: WebhookReceiver;
const children: ChildProcess[] = [];

before(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-crash-'));
  receiver = await startWebhookReceiver();
});
after(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await receiver?.close();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

async function startChild(mode: 'hold' | 'deliver'): Promise<Child> {
  const child = fork(path.join(import.meta.dirname, 'events-crash-cloud.ts'), [dataDir, database.url, mode], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  const ready = await new Promise<{ url: string; bootstrap: BootstrapFile | undefined }>(
    (resolve, reject) => {
      child.once('message', (message) => resolve(message as never));
      child.once('exit', (code) => reject(new Error(`cloud process exited early (code ${code})`)));
    },
  );
  child.removeAllListeners('exit');
  return { process: child, ...ready };
}

test('SIGKILL after commit, before sending: after restart every notification arrives exactly once', async () => {
  const first = await startChild('hold');
  const bootstrap = first.bootstrap as BootstrapFile;
  const owner = await createAuthedClients(first.url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key });
  const machine = await newMachine(owner, bootstrap.location_id, 'crash-bot');
  await setTriggers(owner, machine.partId, [
    webhookTrigger(
      'data',
      { type: 'part_data_ingested', data_ingested: { data_types: ['tabular', 'binary'] } },
      receiver.url,
      'data',
    ),
    ...logsAndOnlineTriggers(receiver.url),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const sdk = await ownerSdk(first.url, bootstrap);
  const robot = await machineClients(first.url, machine);
  const now = Date.now();
  const tabular = 12;
  await Promise.all(
    Array.from({ length: tabular }, (_, i) =>
      sdk.dataClient.tabularDataCaptureUpload(
        [{ readings: { i } }] as never,
        machine.partId,
        'rdk:component:sensor',
        `sensor-${i}`,
        'Readings',
        [[new Date(now - 1000), new Date(now - 999)]],
      ),
    ),
  );
  await sdk.dataClient.binaryDataCaptureUpload(
    new Uint8Array([1, 2, 3, 4]),
    machine.partId,
    'rdk:component:camera',
    'cam',
    'ReadImage',
    '.bin',
    [new Date(now - 500), new Date(now - 499)],
  );
  await robot.robot.log({
    id: machine.partId,
    logs: [
      {
        level: 'error',
        message: 'motor stalled',
        loggerName: 'rdk.motor',
        host: 'pi',
        time: timestampFromMs(now),
        fields: [],
      },
    ],
  });
  // Every RPC above answered: its transaction committed. Crash now.
  first.process.kill('SIGKILL');
  await new Promise((resolve) => first.process.once('exit', resolve));
  assert.equal(receiver.requests.length, 0, 'nothing was sent before the crash');

  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    const recorded = await db.query<{ trigger_name: string; n: number }>(
      `SELECT trigger_name, count(*)::int AS n FROM trigger_deliveries WHERE part_id = $1 GROUP BY 1 ORDER BY 1`,
      [machine.partId],
    );
    assert.deepEqual(
      recorded.rows.map((r) => [r.trigger_name, r.n]),
      [
        ['data', tabular + 1],
        ['errors', 1],
        ['online', 1],
      ],
    );

    const second = await startChild('deliver');
    const expected = tabular + 3;
    await receiver.waitFor(expected, () => true, 30_000);
    // Give duplicates (a second replica, a re-run job) time to show up.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const data = receiver.requests.filter((r) => r.path === '/data');
    const components = data
      .map((r) => (JSON.parse(r.body) as { component_name: string }).component_name)
      .sort();
    assert.deepEqual(
      components,
      [...Array.from({ length: tabular }, (_, i) => `sensor-${i}`), 'cam'].sort(),
      'every upload notified once',
    );
    assert.equal(receiver.requests.filter((r) => r.path === '/logs').length, 1);
    assert.equal(receiver.requests.filter((r) => r.path === '/online').length, 1);
    assert.equal(receiver.requests.length, expected);
    second.process.send({ type: 'stop' });
    await new Promise((resolve) => second.process.once('exit', resolve));
  } finally {
    await db.end();
  }
});
