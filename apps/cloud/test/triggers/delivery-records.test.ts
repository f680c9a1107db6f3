import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { type Client, Code, createClient } from '@connectrpc/connect';
import { triggerDeliveriesPb } from '@mcloud/protocol';
import { recoverOverdueDeliveries } from '../../src/domain/triggers/delivery/delivery-recovery.ts';
import { applyDeliveryRetention } from '../../src/domain/triggers/delivery/delivery-retention.ts';
import {
  recordTriggerDelivery,
  type TriggerDeliveryInput,
} from '../../src/domain/triggers/trigger-delivery.ts';
import { withTransaction } from '../../src/infra/postgres/database.ts';
import { newMachine, ownerOf, startReplica, type TestMachine } from '../machines/machine-fixtures.ts';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { createForeignOrganization, expectCode } from '../support/fleet-fixtures.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  deliveryInput,
  fastDelivery,
  type Receiver,
  recordDelivery,
  startReceiver,
  waitFor,
  waitForDeliveryStatus,
} from './delivery-fixtures.ts';

const { TriggerDeliveryStatus } = triggerDeliveriesPb;
const run = promisify(execFile);
const mcloudBin = path.join(import.meta.dirname, '..', '..', 'src', 'bin', 'mcloud.ts');

let t: TestCloud;
let owner: AuthedClients;
let machine: TestMachine;
let other: TestMachine;
let receiver: Receiver;
let deliveries: Client<typeof triggerDeliveriesPb.TriggerDeliveryService>;

before(async () => {
  t = await startTestCloud({ configure: fastDelivery });
  owner = await ownerOf(t);
  machine = await newMachine(owner, t.bootstrap.location_id, 'listed');
  other = await newMachine(owner, t.bootstrap.location_id, 'other');
  receiver = await startReceiver();
  receiver.respond = (request, res) => {
    res.statusCode = request.url?.startsWith('/missing') ? 404 : 200;
    res.end();
  };
  deliveries = createClient(triggerDeliveriesPb.TriggerDeliveryService, owner.transport);
});
after(async () => {
  await receiver?.close();
  await t?.stop();
});

function input(overrides: Partial<TriggerDeliveryInput>): TriggerDeliveryInput {
  return deliveryInput(t, machine, {
    triggerName: 'listed-hook',
    eventType: 'part_offline',
    destination: `${receiver.url}/ok`,
    ...overrides,
  });
}

async function mcloud(args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [mcloudBin, ...args], { env: { ...process.env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

let created: string[] = [];
let missing = '';

test('ListTriggerDeliveries: newest first with attempts, keyset pages, trigger and status filters, no credentials', async () => {
  created = [];
  for (let i = 0; i < 6; i++) {
    created.push(
      await recordDelivery(
        t,
        input({
          triggerName: i % 2 === 0 ? 'even-hook' : 'odd-hook',
          destination: `http://user:pa55word@127.0.0.1:${receiver.port}/ok?i=${i}`,
          signingSecret: i === 0 ? `whsec_${Buffer.alloc(32, 7).toString('base64')}` : undefined,
        }),
      ),
    );
  }
  missing = await recordDelivery(
    t,
    input({
      triggerName: 'odd-hook',
      destination: `${receiver.url}/missing`,
      signingSecret: `whsec_${Buffer.alloc(32, 9).toString('base64')}`,
    }),
  );
  await recordDelivery(t, input({ robotId: other.robotId, partId: other.partId }));
  for (const id of [...created, missing]) await waitForDeliveryStatus(t, id);

  const seen: string[] = [];
  let pageToken = '';
  let pages = 0;
  do {
    const page = await deliveries.listTriggerDeliveries({ partId: machine.partId, pageSize: 3, pageToken });
    seen.push(...page.deliveries.map((d) => d.id));
    pageToken = page.nextPageToken;
    pages += 1;
  } while (pageToken);
  assert.equal(pages, 3);
  assert.deepEqual(seen, [...created, missing].reverse());

  const { deliveries: all } = await deliveries.listTriggerDeliveries({ partId: machine.partId });
  const first = all.find((d) => d.id === created[0]);
  assert.ok(first);
  assert.equal(first.signed, true);
  assert.equal(first.destination, `http://127.0.0.1:${receiver.port}/ok?i=0`);
  assert.equal(first.status, TriggerDeliveryStatus.DELIVERED);
  assert.equal(first.eventType, 'part_offline');
  assert.deepEqual(first.facts, { kind: 'part-status', at: '2026-11-21T03:00:00.000Z' });
  assert.equal(first.attempts.length, 1);
  assert.equal(first.attempts[0]?.statusCode, 200);
  assert.ok(first.deliveredAt);
  assert.ok(!JSON.stringify(all.map((d) => d.destination)).includes('pa55word'));

  const odd = await deliveries.listTriggerDeliveries({ partId: machine.partId, triggerName: 'odd-hook' });
  assert.deepEqual(
    odd.deliveries.map((d) => d.id),
    [missing, created[5], created[3], created[1]],
  );
  const failed = await deliveries.listTriggerDeliveries({
    partId: machine.partId,
    status: TriggerDeliveryStatus.FAILED,
  });
  assert.deepEqual(
    failed.deliveries.map((d) => [d.id, d.lastStatusCode, d.lastError]),
    [[missing, 404, 'unretryable status code 404 (Not Found)']],
  );
});

test('ListTriggerDeliveries / RedeliverTriggerDelivery validate every field; other organizations see NotFound', async () => {
  await expectCode(
    deliveries.listTriggerDeliveries({ partId: 'nope' }),
    Code.InvalidArgument,
    /part_id: must be a UUID/,
  );
  await expectCode(
    deliveries.listTriggerDeliveries({ partId: '' }),
    Code.InvalidArgument,
    /part_id: is required/,
  );
  await expectCode(
    deliveries.listTriggerDeliveries({ partId: machine.partId, pageSize: 501 }),
    Code.InvalidArgument,
    /page_size: must be from 1 to 500/,
  );
  await expectCode(
    deliveries.listTriggerDeliveries({ partId: machine.partId, pageToken: 'garbage' }),
    Code.InvalidArgument,
    /page_token: is not a token returned by ListTriggerDeliveries/,
  );
  await expectCode(
    deliveries.listTriggerDeliveries({ partId: machine.partId, triggerName: 'x'.repeat(201) }),
    Code.InvalidArgument,
    /trigger_name: must be at most 200 characters/,
  );
  await expectCode(
    deliveries.listTriggerDeliveries({
      partId: machine.partId,
      status: 9 as triggerDeliveriesPb.TriggerDeliveryStatus,
    }),
    Code.InvalidArgument,
    /status: must be/,
  );
  await expectCode(
    deliveries.redeliverTriggerDelivery({ id: 'x' }),
    Code.InvalidArgument,
    /id: must be a UUID/,
  );
  await expectCode(
    deliveries.redeliverTriggerDelivery({ id: '00000000-0000-4000-8000-000000000000' }),
    Code.NotFound,
  );

  const foreign = await createForeignOrganization(t);
  const stranger = await createAuthedClients(t.url, { keyId: foreign.apiKeyId, key: foreign.apiKey });
  const strangerDeliveries = createClient(triggerDeliveriesPb.TriggerDeliveryService, stranger.transport);
  await expectCode(strangerDeliveries.listTriggerDeliveries({ partId: machine.partId }), Code.NotFound);
  await expectCode(strangerDeliveries.redeliverTriggerDelivery({ id: missing }), Code.NotFound);

  receiver.respond = (_request, res) => {
    // Holds the first attempt of /pending open until the test checks the status.
    setTimeout(() => res.end(), 800);
  };
  const pending = await recordDelivery(t, input({ destination: `${receiver.url}/pending` }));
  await expectCode(
    deliveries.redeliverTriggerDelivery({ id: pending }),
    Code.FailedPrecondition,
    /is pending/,
  );
  await waitForDeliveryStatus(t, pending);
  receiver.respond = (request, res) => {
    res.statusCode = request.url?.startsWith('/missing') ? 404 : 200;
    res.end();
  };
});

test('RedeliverTriggerDelivery: a failed delivery is sent again with the same webhook id and its attempts kept', async () => {
  receiver.respond = (_request, res) => res.end();
  const before = receiver.requests.filter((r) => r.url === '/missing').length;
  const { delivery } = await deliveries.redeliverTriggerDelivery({ id: missing });
  assert.equal(delivery?.redeliveryCount, 1);
  const done = await waitForDeliveryStatus(t, missing);
  assert.equal(done.status, 'delivered');
  assert.equal(done.attemptCount, 2);
  const sent = receiver.requests.filter((r) => r.url === '/missing');
  assert.equal(sent.length, before + 1);
  assert.deepEqual(
    sent.map((r) => r.headers['webhook-id']),
    sent.map(() => missing),
  );
  const { deliveries: listed } = await deliveries.listTriggerDeliveries({
    partId: machine.partId,
    triggerName: 'odd-hook',
    pageSize: 1,
  });
  assert.deepEqual(
    listed[0]?.attempts.map((a) => a.statusCode),
    [404, 200],
  );
  // A second redelivery of the delivered row is allowed; one already in progress is not.
  await deliveries.redeliverTriggerDelivery({ id: missing });
  await waitForDeliveryStatus(t, missing);
});

test('mcloud triggers deliveries / redeliver talk to the running cloud (bootstrap.json or flags)', async () => {
  const listed = await mcloud([
    'triggers',
    'deliveries',
    '--part',
    machine.partId,
    '--trigger',
    'even-hook',
    '--json',
    '--data-dir',
    t.dataDir,
  ]);
  assert.equal(listed.code, 0, listed.stderr);
  const json = JSON.parse(listed.stdout) as {
    deliveries: Array<{ id: string; status: string; attempts: unknown[] }>;
  };
  assert.deepEqual(
    json.deliveries.map((d) => d.id),
    [created[4], created[2], created[0]],
  );
  assert.equal(json.deliveries[0]?.status, 'delivered');
  assert.equal(json.deliveries[0]?.attempts.length, 1);

  const text = await mcloud([
    'triggers',
    'deliveries',
    '--part',
    machine.partId,
    '--status',
    'delivered',
    '--url',
    t.url,
    '--api-key-id',
    t.bootstrap.api_key_id,
    // `=`: a key may start with "-", which parseArgs would not take as the option's value.
    `--api-key=${t.bootstrap.api_key}`,
  ]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    new RegExp(`${created[1]}  delivered  odd-hook  part_offline  webhook http://127\\.0\\.0\\.1:`),
  );
  assert.ok(!text.stdout.includes('pa55word'));

  const redelivered = await mcloud(['triggers', 'redeliver', created[1] as string, '--data-dir', t.dataDir]);
  assert.equal(redelivered.code, 0, redelivered.stderr);
  assert.match(redelivered.stdout, /^redelivering /);
  assert.equal((await waitForDeliveryStatus(t, created[1] as string)).redeliveryCount, 1);

  const bad = await mcloud(['triggers', 'deliveries', '--part', 'nope', '--data-dir', t.dataDir]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /part_id: must be a UUID .*invalid_argument/);
  const badStatus = await mcloud([
    'triggers',
    'deliveries',
    '--part',
    machine.partId,
    '--status',
    'lost',
    '--data-dir',
    t.dataDir,
  ]);
  assert.equal(badStatus.code, 2);
  assert.match(badStatus.stderr, /--status must be one of pending, retrying, delivered, failed/);
  const noKey = await mcloud([
    'triggers',
    'deliveries',
    '--part',
    machine.partId,
    '--data-dir',
    path.join(t.dataDir, 'none'),
  ]);
  assert.equal(noKey.code, 2);
  assert.match(noKey.stderr, /give --url, --api-key-id and --api-key/);
});

test('retention deletes deliveries (and attempts) older than 30 days, in every organization', async () => {
  const old = await recordDelivery(t, input({ destination: `${receiver.url}/old` }));
  await waitForDeliveryStatus(t, old);
  await t.cloud.deps.db.query(
    "UPDATE trigger_deliveries SET created_at = now() - interval '31 days' WHERE id = $1",
    [old],
  );
  const recent = await recordDelivery(t, input({ destination: `${receiver.url}/recent` }));
  await waitForDeliveryStatus(t, recent);
  // Rate-limit rows: one last recorded beyond the largest seconds_between_notifications (30 days), one within.
  for (const [destination, age] of [
    ['https://example.com/stale', '30 days 1 minute'],
    ['https://example.com/live', '29 days'],
  ]) {
    await t.cloud.deps.db.query(
      `INSERT INTO trigger_rate_limits
         (organization_id, part_id, trigger_name, notification_type, destination, last_recorded_at)
       VALUES ($1, $2, 'limited', 'webhook', $3, now() - $4::interval)`,
      [t.bootstrap.organization_id, machine.partId, destination, age],
    );
  }
  const deleted = await applyDeliveryRetention(t.cloud.deps.db, { nowMs: () => Date.now() }, 30);
  assert.deepEqual(deleted, { deliveries: 1, rateLimits: 1 });
  const limits = await t.cloud.deps.db.query<{ destination: string }>(
    "SELECT destination FROM trigger_rate_limits WHERE trigger_name = 'limited'",
  );
  assert.deepEqual(
    limits.rows.map((r) => r.destination),
    ['https://example.com/live'],
  );
  const remaining = await t.cloud.deps.db.query<{ id: string }>(
    'SELECT id::text FROM trigger_deliveries WHERE id = ANY($1::uuid[])',
    [[old, recent]],
  );
  assert.deepEqual(
    remaining.rows.map((r) => r.id),
    [recent],
  );
  const attempts = await t.cloud.deps.db.query(
    'SELECT 1 FROM trigger_delivery_attempts WHERE delivery_id = $1',
    [old],
  );
  assert.equal(attempts.rowCount, 0);
  // Seen from a clock 31 days ahead, the recent one has expired too.
  const later = await applyDeliveryRetention(
    t.cloud.deps.db,
    { nowMs: () => Date.now() + 31 * 86_400_000 },
    30,
  );
  assert.ok(later.deliveries >= 1);
  assert.ok(later.rateLimits >= 1);
});

test('recovery re-enqueues an open delivery whose job was lost; delivered ones and fresh ones are left alone', async () => {
  const lost = await t.cloud.deps.db.query<{ id: string }>(
    `INSERT INTO trigger_deliveries (organization_id, location_id, robot_id, part_id, trigger_name, event_type,
       notification_type, destination, facts, occurred_at)
     VALUES ($1, $2, $3, $4, 'lost-hook', 'part_online', 'webhook', $5, $6, now()) RETURNING id::text`,
    [
      t.bootstrap.organization_id,
      t.bootstrap.location_id,
      machine.robotId,
      machine.partId,
      `${receiver.url}/lost`,
      JSON.stringify({ kind: 'part-status', at: new Date().toISOString() }),
    ],
  );
  const id = lost.rows[0]?.id as string;
  const now = { nowMs: () => Date.now() };
  assert.equal(await recoverOverdueDeliveries(t.cloud.deps.db, now, 600_000), 0);
  const later = { nowMs: () => Date.now() + 11 * 60_000 };
  assert.equal(await recoverOverdueDeliveries(t.cloud.deps.db, later, 600_000), 1);
  const delivered = await waitForDeliveryStatus(t, id);
  assert.equal(delivered.status, 'delivered');
  assert.equal(receiver.requests.filter((r) => r.url === '/lost').length, 1);
  assert.equal(await recoverOverdueDeliveries(t.cloud.deps.db, later, 600_000), 0);
});

test('two replicas on one database send each delivery exactly once', async () => {
  const replica = await startReplica(t);
  try {
    const ids: string[] = [];
    await withTransaction(t.cloud.deps.db, async (tx) => {
      for (let i = 0; i < 60; i++) {
        ids.push(await recordTriggerDelivery(tx, input({ destination: `${receiver.url}/replicas/${i}` })));
      }
    });
    for (const id of ids) assert.equal((await waitForDeliveryStatus(t, id)).status, 'delivered');
    const received = receiver.requests.filter((r) => r.url.startsWith('/replicas/')).map((r) => r.url);
    assert.equal(received.length, 60);
    assert.equal(new Set(received).size, 60);
    const attempts = await t.cloud.deps.db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM trigger_delivery_attempts WHERE delivery_id = ANY($1::uuid[])',
      [ids],
    );
    assert.equal(attempts.rows[0]?.n, '60');
  } finally {
    await replica.stop();
  }
});

test('a delivery in flight when its replica stops is not counted as an attempt and is sent by another replica', async () => {
  // Only replicas deliver from here on (this file's last test).
  await t.cloud.deps.jobs.stop();
  let hang = true;
  receiver.respond = (_request, res) => {
    if (hang) return; // held open until the replica gives up on it
    res.end();
  };
  let first: Awaited<ReturnType<typeof startReplica>> | undefined = await startReplica(t);
  let second: Awaited<ReturnType<typeof startReplica>> | undefined;
  try {
    const id = await recordDelivery(t, input({ destination: `${receiver.url}/in-flight` }));
    await waitFor(() => (receiver.requests.some((r) => r.url === '/in-flight') ? true : undefined));
    const stopping = first;
    first = undefined;
    await stopping.stop(); // graceful: running jobs see their signal abort after 5 s
    const pending = await waitForDeliveryStatus(t, id, ['pending']);
    assert.equal(pending.attemptCount, 0);
    hang = false;
    second = await startReplica(t);
    const delivered = await waitForDeliveryStatus(t, id);
    assert.equal(delivered.status, 'delivered');
    assert.equal(delivered.attemptCount, 1);
    assert.equal(receiver.requests.filter((r) => r.url === '/in-flight').length, 2);
  } finally {
    await first?.stop();
    await second?.stop();
  }
});
