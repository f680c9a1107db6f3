import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { logEntryChunks } from '../../src/domain/triggers/machine-event-triggers.ts';
import {
  machineClients,
  newMachine,
  ownerOf,
  startMachineTestCloud,
  startReplica,
  type TestMachine,
} from '../machines/machine-fixtures.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import type { TestCloud } from '../support/test-cloud.ts';
import { deliveriesOf, hook, queuedDeliveryIds, setTriggers, settle } from './events-fixtures.ts';

let nowMs = Date.parse('2026-09-01T06:00:00Z');
const clock: Clock = { nowMs: () => nowMs };
let t: TestCloud;
let owner: AuthedClients;

before(async () => {
  t = await startMachineTestCloud(clock);
  owner = await ownerOf(t);
});
after(async () => {
  await t?.stop();
});

async function machineWith(
  name: string,
  triggers: unknown[],
): Promise<{ machine: TestMachine; robot: AuthedClients }> {
  const machine = await newMachine(owner, t.bootstrap.location_id, name);
  await setTriggers(owner, machine.partId, triggers);
  await settle();
  return { machine, robot: await machineClients(t.url, machine) };
}

test('part_online on first contact, part_offline when the sweep finds it silent; rate limited per destination', async () => {
  const { machine, robot } = await machineWith('status-bot', [
    {
      name: 'up',
      event: { type: 'part_online' },
      notifications: [hook('up', { seconds_between_notifications: 120 })],
    },
    {
      name: 'down',
      event: { type: 'part_offline' },
      notifications: [hook('down'), { type: 'email', value: 'all_machine_owners' }],
    },
  ]);
  const t0 = nowMs;
  await robot.robot.needsRestart({ id: machine.partId });
  let rows = await deliveriesOf(t, machine.partId);
  assert.deepEqual(
    rows.map((r) => [r.trigger_name, r.event_type]),
    [['up', 'part_online']],
  );
  assert.deepEqual(rows[0]?.facts, { kind: 'part-status', at: new Date(t0).toISOString() });
  assert.equal(rows[0]?.occurred_at.getTime(), t0);
  assert.ok((await queuedDeliveryIds(t)).has(rows[0]?.id as string));

  // Contacts while online are no transitions.
  nowMs += 10_000;
  await robot.robot.needsRestart({ id: machine.partId });
  assert.equal((await deliveriesOf(t, machine.partId)).length, 1);

  nowMs += 31_000;
  assert.equal(await t.cloud.deps.machines.sweepOffline(), 1);
  rows = await deliveriesOf(t, machine.partId);
  assert.deepEqual(
    rows.slice(1).map((r) => [r.trigger_name, r.event_type, r.notification_type, r.destination]),
    [
      ['down', 'part_offline', 'email', 'all_machine_owners'],
      ['down', 'part_offline', 'webhook', 'http://127.0.0.1:9/down'],
    ].sort((a, b) => (a[3] as string).localeCompare(b[3] as string)),
  );

  // Back within 120 s of the last `up` notification: the transition happens, the notification does not.
  nowMs += 1_000;
  await robot.robot.needsRestart({ id: machine.partId });
  rows = await deliveriesOf(t, machine.partId);
  assert.equal(rows.filter((r) => r.trigger_name === 'up').length, 1);
  const transitions = await t.cloud.deps.db.query('SELECT 1 FROM part_status_changes WHERE part_id = $1', [
    machine.partId,
  ]);
  assert.equal(transitions.rowCount, 3, 'online, offline, online recorded');

  // Offline again (not rate limited: 2 more), online after 120 s: notified again.
  nowMs += 31_000;
  await t.cloud.deps.machines.sweepOffline();
  nowMs = t0 + 121_000;
  await robot.robot.needsRestart({ id: machine.partId });
  rows = await deliveriesOf(t, machine.partId);
  assert.equal(rows.filter((r) => r.trigger_name === 'up').length, 2);
  assert.equal(rows.filter((r) => r.trigger_name === 'down').length, 4);
});

function logEntry(level: string, message: string, loggerName = 'rdk.resource') {
  return {
    level,
    message,
    loggerName,
    host: 'pi',
    time: timestampFromMs(nowMs - 1_000),
    caller: { Defined: true, File: 'x.go', Line: 7, Function: 'f' },
    fields: [{ Key: 'n', Type: 11, Integer: 1 }],
  };
}

test('conditional_logs_ingested: one delivery per batch with the matching entries; app.trigger.* ignored', async () => {
  const { machine, robot } = await machineWith('log-bot', [
    {
      name: 'errors',
      event: { type: 'conditional_logs_ingested', log_levels: ['error', 'warn'] },
      notifications: [hook('errors')],
    },
    {
      name: 'infos',
      event: { type: 'conditional_logs_ingested', log_levels: ['info'] },
      notifications: [hook('infos')],
    },
  ]);
  const base = (await deliveriesOf(t, machine.partId)).length; // the online transition has no trigger here
  await robot.robot.log({
    id: machine.partId,
    logs: [
      logEntry('debug', 'noise'),
      logEntry('warning', 'low battery'),
      logEntry('error', 'delivery failed', 'app.trigger.errors'),
      logEntry('ERROR', 'motor stalled'),
      logEntry('fatal', 'gone'),
    ],
  });
  let rows = (await deliveriesOf(t, machine.partId)).slice(base);
  assert.deepEqual(
    rows.map((r) => r.trigger_name),
    ['errors'],
  );
  const entries = (rows[0]?.facts as unknown as { entries: Record<string, unknown>[] }).entries;
  assert.deepEqual(
    entries.map((e) => [e.level, e.message, e.loggerName]),
    [
      ['warn', 'low battery', 'rdk.resource'],
      ['error', 'motor stalled', 'rdk.resource'],
      ['fatal', 'gone', 'rdk.resource'],
    ],
  );
  assert.equal(entries[0]?.time, new Date(nowMs - 1_000).toISOString());
  assert.deepEqual(entries[0]?.caller, { Defined: true, File: 'x.go', Line: 7, Function: 'f' });
  assert.ok(Array.isArray(entries[0]?.fields));

  // The cloud's own failure lines never fire a logs trigger, whatever their level.
  await robot.robot.log({
    id: machine.partId,
    logs: [logEntry('error', 'POST failed. ResponseCode: 500', 'app.trigger.errors')],
  });
  await robot.robot.log({ id: machine.partId, logs: [logEntry('debug', 'quiet')] });
  rows = (await deliveriesOf(t, machine.partId)).slice(base);
  assert.equal(rows.length, 1);

  await robot.robot.log({ id: machine.partId, logs: [logEntry('info', 'hello'), logEntry('info', 'again')] });
  rows = (await deliveriesOf(t, machine.partId)).slice(base);
  assert.deepEqual(
    rows.map((r) => r.trigger_name),
    ['errors', 'infos'],
  );
  assert.equal((rows[1]?.facts as unknown as { entries: unknown[] }).entries.length, 2);

  // A large batch is split into notifications of at most 100 entries (and 1 MiB), in order.
  await robot.robot.log({
    id: machine.partId,
    logs: Array.from({ length: 250 }, (_, i) => logEntry('error', `e${i}`)),
  });
  const chunks = (await deliveriesOf(t, machine.partId))
    .slice(base + 2)
    .map((r) => (r.facts as unknown as { entries: { message: string }[] }).entries);
  assert.deepEqual(chunks.map((c) => c.length).sort(), [100, 100, 50]);
  assert.deepEqual(
    chunks
      .flat()
      .map((e) => e.message)
      .sort(),
    Array.from({ length: 250 }, (_, i) => `e${i}`).sort(),
  );
});

/** The trigger the configuration tests save: error logs to one webhook. */
const errorLogTrigger = {
  name: 'errors',
  event: { type: 'conditional_logs_ingested', log_levels: ['error'] },
  notifications: [hook('e')],
};

test('a configuration change is seen by the next event (cache invalidated by NOTIFY)', async () => {
  const { machine, robot } = await machineWith('config-bot', []);
  await robot.robot.log({ id: machine.partId, logs: [logEntry('error', 'before')] });
  assert.equal((await deliveriesOf(t, machine.partId)).length, 0);
  await setTriggers(owner, machine.partId, [errorLogTrigger]);
  await settle();
  await robot.robot.log({ id: machine.partId, logs: [logEntry('error', 'after')] });
  assert.equal((await deliveriesOf(t, machine.partId)).length, 1);
  await setTriggers(owner, machine.partId, []);
  await settle();
  await robot.robot.log({ id: machine.partId, logs: [logEntry('error', 'removed')] });
  assert.equal((await deliveriesOf(t, machine.partId)).length, 1);
});

test('a configuration saved through one replica is seen by the next event on another', async () => {
  const replica = await startReplica(t, clock);
  try {
    const { machine } = await machineWith('replica-bot', []);
    const onReplica = await machineClients(replica.cloud.url, machine);
    // The replica caches "no triggers" for the part.
    await onReplica.robot.log({ id: machine.partId, logs: [logEntry('error', 'before')] });
    assert.equal((await deliveriesOf(t, machine.partId)).length, 0);
    await setTriggers(owner, machine.partId, [errorLogTrigger]);
    await settle();
    await onReplica.robot.log({ id: machine.partId, logs: [logEntry('error', 'after')] });
    const rows = await deliveriesOf(t, machine.partId);
    assert.equal(rows.length, 1);
    assert.deepEqual(
      (rows[0]?.facts as unknown as { entries: { message: string }[] }).entries.map((e) => e.message),
      ['after'],
    );
  } finally {
    await replica.stop();
  }
});

test('log notifications are bounded in bytes too', () => {
  const big = (i: number) => ({
    time: 't',
    level: 'error',
    loggerName: 'l',
    message: `${i}${'x'.repeat(300_000)}`,
  });
  const chunks = logEntryChunks(Array.from({ length: 7 }, (_, i) => big(i)));
  assert.deepEqual(
    chunks.map((c) => c.length),
    [3, 3, 1],
  );
  const huge = { ...big(0), message: 'y'.repeat(2 * 1024 * 1024) };
  assert.deepEqual(
    logEntryChunks([huge, big(1)]).map((c) => c.length),
    [1, 1],
    'an entry larger than the limit still goes, alone',
  );
});
