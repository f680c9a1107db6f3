import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { appPb } from '@mcloud/protocol';
import type { MachineEvent } from '../../src/domain/machines/machine-events.ts';
import type { Clock } from '../../src/domain/shared/clock.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import type { TestCloud } from '../support/test-cloud.ts';
import {
  machineClients,
  newMachine,
  ownerOf,
  startMachineTestCloud,
  startReplica,
} from './machine-fixtures.ts';

let nowMs = Date.parse('2026-07-01T00:00:00Z');
const clock: Clock = { nowMs: () => nowMs };
let t: TestCloud;
let replica: Awaited<ReturnType<typeof startReplica>>;
let owner: AuthedClients;
const events: { replica: string; event: MachineEvent }[] = [];

before(async () => {
  t = await startMachineTestCloud(clock);
  replica = await startReplica(t, clock);
  for (const [name, deps] of [
    ['a', t.cloud.deps],
    ['b', replica.cloud.deps],
  ] as const) {
    deps.machineEventObservers.push(async (_tx, event) => {
      events.push({ replica: name, event });
    });
  }
  owner = await ownerOf(t);
});
after(async () => {
  await replica?.stop();
  await t?.stop();
});

async function lastAccessMs(partId: string): Promise<number | undefined> {
  const rows = await t.cloud.deps.db.query<{ last_access: Date | null }>(
    'SELECT last_access FROM robot_parts WHERE id = $1',
    [partId],
  );
  return rows.rows[0]?.last_access?.getTime();
}

test('last_access writes are throttled per part; the sweep marks silent parts offline once across replicas', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'sweep-bot');
  const quiet = await newMachine(owner, t.bootstrap.location_id, 'sweep-quiet');
  const robot = await machineClients(t.url, machine);
  const t0 = nowMs;
  await robot.robot.needsRestart({ id: machine.partId });
  assert.equal(await lastAccessMs(machine.partId), t0);
  nowMs = t0 + 2_000;
  await robot.robot.needsRestart({ id: machine.partId });
  assert.equal(await lastAccessMs(machine.partId), t0, 'second contact within 5 s is not written');
  nowMs = t0 + 6_000;
  await robot.robot.needsRestart({ id: machine.partId });
  assert.equal(await lastAccessMs(machine.partId), t0 + 6_000);

  // 29 s of silence: still online, the sweep leaves it.
  nowMs = t0 + 35_000;
  assert.equal(await t.cloud.deps.machines.sweepOffline(), 0);
  assert.equal(
    (await owner.app.getRobotPart({ id: machine.partId })).part?.onlineState,
    appPb.OnlineState.ONLINE,
  );

  // 31 s: both replicas sweep at the same moment; the transition is recorded exactly once.
  nowMs = t0 + 37_000;
  const counts = await Promise.all([
    t.cloud.deps.machines.sweepOffline(),
    replica.cloud.deps.machines.sweepOffline(),
  ]);
  assert.equal(counts[0] + counts[1], 1, `swept ${counts}`);
  const part = (await owner.app.getRobotPart({ id: machine.partId })).part;
  assert.equal(part?.onlineState, appPb.OnlineState.OFFLINE);
  assert.equal(part?.secondsSinceOnline, 31n);
  const robotMessage = (await owner.app.getRobot({ id: machine.robotId })).robot;
  assert.equal(robotMessage?.onlineState, appPb.OnlineState.OFFLINE);
  assert.equal(robotMessage?.secondsSinceOnline, 31n);
  const rows = await t.cloud.deps.db.query<{ online: boolean; at: Date; organization_id: string }>(
    'SELECT online, at, organization_id FROM part_status_changes WHERE part_id = $1 ORDER BY id',
    [machine.partId],
  );
  assert.deepEqual(
    rows.rows.map((r) => [r.online, r.at.getTime(), r.organization_id]),
    [
      [true, t0, t.bootstrap.organization_id],
      [false, t0 + 37_000, t.bootstrap.organization_id],
    ],
  );
  const mine = events.filter((e) => e.event.partId === machine.partId).map((e) => e.event.kind);
  assert.deepEqual(mine, ['part-online', 'part-offline']);
  const offline = events.find(
    (e) => e.event.kind === 'part-offline' && e.event.partId === machine.partId,
  )?.event;
  assert.deepEqual(offline && { ...offline, at: offline.kind === 'part-logs' ? 0 : offline.at.getTime() }, {
    kind: 'part-offline',
    organizationId: t.bootstrap.organization_id,
    locationId: t.bootstrap.location_id,
    robotId: machine.robotId,
    partId: machine.partId,
    at: t0 + 37_000,
  });
  // A part that never called stays awaiting setup and is never swept.
  assert.equal(
    (await owner.app.getRobotPart({ id: quiet.partId })).part?.onlineState,
    appPb.OnlineState.AWAITING_SETUP,
  );

  // Contact again on the other replica: online at once (the throttle does not hide the transition).
  nowMs = t0 + 38_000;
  await (await machineClients(replica.cloud.url, machine)).robot.needsRestart({ id: machine.partId });
  assert.equal(
    (await owner.app.getRobotPart({ id: machine.partId })).part?.onlineState,
    appPb.OnlineState.ONLINE,
  );
});

test('an observer that fails rolls the status change back; the next contact retries it', async () => {
  const machine = await newMachine(owner, t.bootstrap.location_id, 'observer-bot');
  const robot = await machineClients(t.url, machine);
  let fail = true;
  const observers = t.cloud.deps.machineEventObservers;
  const failing = async (_tx: unknown, event: MachineEvent) => {
    if (fail && event.partId === machine.partId) throw new Error('queue unavailable');
  };
  observers.unshift(failing);
  try {
    nowMs += 60_000;
    await robot.robot.needsRestart({ id: machine.partId }); // the call itself succeeds
    const state = await t.cloud.deps.db.query('SELECT online FROM robot_parts WHERE id = $1', [
      machine.partId,
    ]);
    assert.equal(state.rows[0]?.online, false);
    const count = await t.cloud.deps.db.query('SELECT 1 FROM part_status_changes WHERE part_id = $1', [
      machine.partId,
    ]);
    assert.equal(count.rowCount, 0);
    fail = false;
    nowMs += 1_000; // within the write throttle, but the failed write is retried
    await robot.robot.needsRestart({ id: machine.partId });
    const after = await t.cloud.deps.db.query('SELECT online FROM robot_parts WHERE id = $1', [
      machine.partId,
    ]);
    assert.equal(after.rows[0]?.online, true);
  } finally {
    observers.splice(observers.indexOf(failing), 1);
  }
});
