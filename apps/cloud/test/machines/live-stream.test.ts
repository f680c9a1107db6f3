import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import { appPb } from '@mcloud/protocol';
import type { MachineEvent } from '../../src/domain/machines/machine-events.ts';
import { notificationListenerName } from '../../src/infra/postgres/notification-listener.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import type { TestCloud } from '../support/test-cloud.ts';
import {
  heartbeats,
  machineClients,
  newMachine,
  nextOfKind,
  openLiveStream,
  ownerOf,
  startMachineTestCloud,
  startReplica,
} from './machine-fixtures.ts';

let t: TestCloud;
let replica: Awaited<ReturnType<typeof startReplica>>;
let owner: AuthedClients;
const events: MachineEvent[] = [];

before(async () => {
  t = await startMachineTestCloud();
  replica = await startReplica(t);
  t.cloud.deps.machineEventObservers.push(async (tx, event) => {
    // Observers run inside the transaction: what they write commits with the status change.
    await tx.query('SELECT 1');
    events.push(event);
  });
  owner = await ownerOf(t);
});
after(async () => {
  await replica?.stop();
  await t?.stop();
});

async function partState(partId: string) {
  return (await owner.app.getRobotPart({ id: partId })).part;
}

async function transitions(partId: string): Promise<boolean[]> {
  const rows = await t.cloud.deps.db.query<{ online: boolean }>(
    'SELECT online FROM part_status_changes WHERE part_id = $1 ORDER BY id',
    [partId],
  );
  return rows.rows.map((r) => r.online);
}

test('live stream: welcome, heartbeats, config push on save and restart push, clean goodbye goes offline at once', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'stream-bot');
  const robot = await machineClients(t.url, machine);
  const stream = openLiveStream(robot, machine.partId);
  const stopBeats = heartbeats(stream);
  try {
    const welcome = await nextOfKind(stream, 'welcome');
    assert.equal(welcome.heartbeatInterval?.nanos, 100_000_000);
    assert.equal(welcome.offlineAfter?.nanos, 500_000_000);
    assert.equal((await partState(machine.partId))?.onlineState, appPb.OnlineState.ONLINE);
    assert.ok(events.some((e) => e.kind === 'part-online' && e.partId === machine.partId));
    await nextOfKind(stream, 'heartbeat');

    const saved = performance.now();
    await owner.app.updateRobotPart({ id: machine.partId, name: '', robotConfig: { components: [] } });
    const changed = await nextOfKind(stream, 'configChanged');
    const pushMs = performance.now() - saved;
    console.log(
      `config push: UpdateRobotPart returned → config_changed received in ${pushMs.toFixed(1)} ms (incl. the call)`,
    );
    const { config } = await robot.robot.config({ id: machine.partId });
    assert.equal(changed.revision, config?.revision);

    await owner.app.markPartForRestart({ partId: machine.partId });
    await nextOfKind(stream, 'restartRequested');
    assert.equal((await robot.robot.needsRestart({ id: machine.partId })).mustRestart, true);

    // Stays online while heartbeats flow (well past the silence timeout).
    await new Promise((resolve) => setTimeout(resolve, 800));
    assert.equal((await partState(machine.partId))?.onlineState, appPb.OnlineState.ONLINE);
  } finally {
    stopBeats();
  }
  stream.end();
  assert.equal(await stream.ended, undefined);
  // No waiting for the 30 s liveness window: the goodbye is an offline transition.
  await waitFor(async () => (await partState(machine.partId))?.onlineState === appPb.OnlineState.OFFLINE);
  assert.deepEqual(await transitions(machine.partId), [true, false]);
  assert.ok(events.some((e) => e.kind === 'part-offline' && e.partId === machine.partId));
  // The next contact brings it back.
  await robot.robot.config({ id: machine.partId });
  assert.equal((await partState(machine.partId))?.onlineState, appPb.OnlineState.ONLINE);
  assert.deepEqual(await transitions(machine.partId), [true, false, true]);
});

test('a silent machine is noticed within the silence timeout; a newer stream supersedes the older', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'silent-bot');
  const robot = await machineClients(t.url, machine);
  const silent = openLiveStream(robot, machine.partId);
  await nextOfKind(silent, 'welcome');
  const started = performance.now();
  const error = await silent.ended;
  const noticedMs = performance.now() - started;
  assert.ok(error instanceof ConnectError && error.code === Code.Unavailable, String(error));
  assert.match((error as ConnectError).message, /no message from the machine/);
  assert.ok(noticedMs < 1_500, `noticed after ${noticedMs} ms`);
  await waitFor(async () => (await partState(machine.partId))?.onlineState === appPb.OnlineState.OFFLINE);

  // Two streams for the same part, on two replicas: the first one ends with Aborted, the part stays online.
  const first = openLiveStream(robot, machine.partId);
  const stopFirst = heartbeats(first);
  await nextOfKind(first, 'welcome');
  const onReplica = openLiveStream(await machineClients(replica.cloud.url, machine), machine.partId);
  const stopSecond = heartbeats(onReplica);
  try {
    await nextOfKind(onReplica, 'welcome');
    const ended = await first.ended;
    assert.ok(ended instanceof ConnectError && ended.code === Code.Aborted, String(ended));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await partState(machine.partId))?.onlineState, appPb.OnlineState.ONLINE);
    assert.deepEqual(await transitions(machine.partId), [true, false, true]);
  } finally {
    stopFirst();
    stopSecond();
    onReplica.end();
    await onReplica.ended;
  }
});

test('config push across replicas: saved on one, pushed by the replica holding the stream', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'replica-bot');
  const onReplica = openLiveStream(await machineClients(replica.cloud.url, machine), machine.partId, '1');
  const stop = heartbeats(onReplica);
  try {
    const welcome = await nextOfKind(onReplica, 'welcome');
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await owner.app.updateRobotPart({ id: machine.partId, name: '', robotConfig: { components: [], i } });
      const changed = await nextOfKind(onReplica, 'configChanged');
      samples.push(performance.now() - started);
      assert.equal(changed.revision, String(Number(welcome.configRevision) + i + 1));
    }
    samples.sort((a, b) => a - b);
    console.log(
      `cross-replica config push (save call + NOTIFY + push), p50 ${samples[2]?.toFixed(1)} ms, max ${samples[4]?.toFixed(1)} ms`,
    );
    assert.equal(replica.cloud.deps.machines.streams.size(), 1);
    assert.equal(t.cloud.deps.machines.streams.size(), 0);
  } finally {
    stop();
    onReplica.end();
    await onReplica.ended;
  }
  // A stale revision in hello is answered with config_changed at once.
  const stale = openLiveStream(await machineClients(t.url, machine), machine.partId, '1');
  await nextOfKind(stale, 'welcome');
  assert.notEqual((await nextOfKind(stale, 'configChanged')).revision, '1');
  stale.end();
  await stale.ended;
});

test('notices lost while the LISTEN connection was down: the machine is told the current revision after the reconnect', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'outage-bot');
  const robot = await machineClients(t.url, machine);
  const stream = openLiveStream(robot, machine.partId);
  const stop = heartbeats(stream);
  try {
    await nextOfKind(stream, 'welcome');
    await t.cloud.deps.db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
      [notificationListenerName],
    );
    await owner.app.updateRobotPart({ id: machine.partId, name: '', robotConfig: { debug: true } });
    const { config } = await robot.robot.config({ id: machine.partId });
    const changed = await nextOfKind(stream, 'configChanged');
    assert.equal(changed.revision, config?.revision);
  } finally {
    stop();
    stream.end();
    await stream.ended;
  }
});

test('revoking the part secret or deleting the part ends its live stream', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'revoked-bot');
  const { part } = await owner.app.createRobotPartSecret({ partId: machine.partId });
  const oldSecret = part?.secrets.find((s) => s.secret === machine.secret);
  assert.ok(oldSecret);
  const stream = openLiveStream(await machineClients(t.url, machine), machine.partId);
  const stop = heartbeats(stream);
  try {
    await nextOfKind(stream, 'welcome');
    await owner.app.deleteRobotPartSecret({ partId: machine.partId, secretId: oldSecret.id });
    const ended = await stream.ended;
    assert.ok(ended instanceof ConnectError && ended.code === Code.Unauthenticated, String(ended));
  } finally {
    stop();
  }

  const doomed = await newMachine(owner, t.bootstrap.location_id, 'deleted-bot');
  const keyStream = openLiveStream(owner, doomed.partId);
  const stopKey = heartbeats(keyStream);
  try {
    await nextOfKind(keyStream, 'welcome');
    await owner.app.deleteRobot({ id: doomed.robotId });
    const ended = await keyStream.ended;
    assert.ok(ended instanceof ConnectError && ended.code === Code.NotFound, String(ended));
  } finally {
    stopKey();
  }
});

test('live stream: bad input', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'bad-stream-bot');
  const other = await newMachine(owner, t.bootstrap.location_id, 'bad-stream-other');
  const robot = await machineClients(t.url, machine);
  const foreignPart = openLiveStream(robot, other.partId);
  const foreignError = await foreignPart.ended;
  assert.ok(
    foreignError instanceof ConnectError && foreignError.code === Code.NotFound,
    String(foreignError),
  );
  const badId = openLiveStream(robot, 'nope');
  const badError = await badId.ended;
  assert.ok(badError instanceof ConnectError && badError.code === Code.InvalidArgument, String(badError));
  assert.match((badError as ConnectError).message, /hello\.part_id/);
  const twice = openLiveStream(robot, machine.partId);
  await nextOfKind(twice, 'welcome');
  twice.send({ case: 'hello', value: { partId: machine.partId } });
  const twiceError = await twice.ended;
  assert.ok(
    twiceError instanceof ConnectError && twiceError.code === Code.InvalidArgument,
    String(twiceError),
  );
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
