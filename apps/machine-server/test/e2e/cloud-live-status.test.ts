/**
 * Issue 4, cloud items 1–2 with a real machine-server process: the agent info the machine reports is
 * recorded on its part; the part is online while the machine keeps its live stream; a killed machine
 * (no goodbye) is noticed within seconds, a stopped one at once; both transitions are recorded.
 */
import assert from 'node:assert/strict';
import { hostname, platform } from 'node:os';
import { test } from 'node:test';
import { appPb } from '@mcloud/protocol';
import { type CloudPart, fakeSensors } from '../support/cloud-machine-fixtures.ts';
import { useCloudForMachines } from '../support/cloud-machine-harness.ts';
import type { MachineProcess } from '../support/machine-process.ts';

const harness = useCloudForMachines();

async function onlineState(part: CloudPart): Promise<appPb.OnlineState | undefined> {
  return (await part.owner.app.getRobotPart({ id: part.partId })).part?.onlineState;
}

/** Milliseconds until the part reaches `state` (fails after `timeoutMs`). */
async function msUntil(part: CloudPart, state: appPb.OnlineState, timeoutMs: number): Promise<number> {
  const started = performance.now();
  while ((await onlineState(part)) !== state) {
    if (performance.now() - started > timeoutMs) {
      assert.fail(`part not ${appPb.OnlineState[state]} within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return performance.now() - started;
}

async function transitions(part: CloudPart): Promise<boolean[]> {
  const { cloud } = await harness.cloud();
  const result = await cloud.deps.db.query<{ online: boolean }>(
    'SELECT online FROM part_status_changes WHERE part_id = $1 ORDER BY id',
    [part.partId],
  );
  return result.rows.map((row) => row.online);
}

async function bootMachine(name: string): Promise<{ part: CloudPart; machine: MachineProcess }> {
  const part = await harness.createPart(name, { components: fakeSensors(1) });
  assert.equal(await onlineState(part), appPb.OnlineState.AWAITING_SETUP);
  const machine = await harness.startPartMachine(part);
  await machine.waitForLine(/machine connection open/);
  await msUntil(part, appPb.OnlineState.ONLINE, 5000);
  return { part, machine };
}

test('the reported agent info is recorded; a killed machine-server is offline within seconds', async () => {
  const { part, machine } = await bootMachine('killed-machine');
  const { part: stored } = await part.owner.app.getRobotPart({ id: part.partId });
  const info = stored?.userSuppliedInfo as Record<string, unknown> | undefined;
  assert.equal(info?.host, hostname());
  assert.equal(info?.os, platform());
  assert.equal(info?.version, '0.1.0');
  assert.match(String(info?.platform), new RegExp(`^${platform()}/(amd64|arm64|arm32v[67]|\\w+)$`));
  assert.ok(Array.isArray(info?.ips));

  machine.child.kill('SIGKILL');
  const ms = await msUntil(part, appPb.OnlineState.OFFLINE, 15_000);
  // The stream's silence timeout is 6 s; a dropped connection may end it sooner.
  assert.ok(ms < 9000, `offline ${Math.round(ms)} ms after SIGKILL`);
  const { part: offline } = await part.owner.app.getRobotPart({ id: part.partId });
  assert.ok(offline?.lastAccess, 'last_access kept');
  // Nothing brings it back.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(await onlineState(part), appPb.OnlineState.OFFLINE);
  assert.deepEqual(await transitions(part), [true, false]);
});

test('a machine-server that stops says goodbye: offline at once', async () => {
  const { part, machine } = await bootMachine('stopped-machine');
  assert.equal(await machine.stop(), 0);
  const ms = await msUntil(part, appPb.OnlineState.OFFLINE, 10_000);
  assert.ok(ms < 2000, `offline ${Math.round(ms)} ms after the process exited`);
  // The goodbye is the machine's last word: no later contact (the final log upload) brings it back.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(await onlineState(part), appPb.OnlineState.OFFLINE);
  assert.deepEqual(await transitions(part), [true, false]);
});
