/**
 * Issue 4, cloud item 1 (`NeedsRestart` set by `MarkPartForRestart`) as a real machine-server sees it
 * (machine-runtime.md A9): with the live stream the restart request is pushed and the machine shuts
 * down cleanly at once; without it the NeedsRestart poll (every 5 s) finds it; with
 * VIAM_AGENT_HANDLES_NEEDS_RESTART_CHECKING the machine leaves it to the agent.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAuthedClients } from '@mcloud/cloud/testing';
import { fakeSensors } from '../support/cloud-machine-fixtures.ts';
import { useCloudForMachines } from '../support/cloud-machine-harness.ts';

const harness = useCloudForMachines();

async function bootAndMark(name: string, env: Record<string, string>) {
  const part = await harness.createPart(name, { components: fakeSensors(1) });
  const machine = await harness.startPartMachine(part, { env });
  await machine.waitForLine(/initial configuration applied/);
  if (env.MCLOUD_MACHINE_CONNECTION !== 'off') await machine.waitForLine(/machine connection open/);
  const exited = new Promise<number | null>((resolve) => machine.child.once('exit', resolve));
  const marked = performance.now();
  await part.owner.app.markPartForRestart({ partId: part.partId });
  return { part, machine, exited, marked };
}

test('pushed over the live stream: the machine shuts down cleanly at once', async () => {
  const { machine, exited, marked } = await bootAndMark('restart-push', {});
  await machine.waitForLine(/the cloud asked for a restart; shutting down/, 10_000);
  assert.equal(await exited, 0);
  const seconds = (performance.now() - marked) / 1000;
  assert.ok(seconds < 3, `exited ${seconds.toFixed(1)} s after MarkPartForRestart`);
  assert.ok(machine.lines.some((line) => /shutdown complete.*app_restart/.test(line)));
});

test('without the live stream the NeedsRestart poll finds it within its 5 s interval', async () => {
  const { exited, marked } = await bootAndMark('restart-poll', { MCLOUD_MACHINE_CONNECTION: 'off' });
  assert.equal(await exited, 0);
  const seconds = (performance.now() - marked) / 1000;
  assert.ok(seconds < 8, `exited ${seconds.toFixed(1)} s after MarkPartForRestart`);
});

test('VIAM_AGENT_HANDLES_NEEDS_RESTART_CHECKING: the machine leaves the request to the agent', async () => {
  const { part, machine } = await bootAndMark('restart-agent', {
    VIAM_AGENT_HANDLES_NEEDS_RESTART_CHECKING: 'true',
  });
  await new Promise((resolve) => setTimeout(resolve, 7000));
  assert.equal(machine.child.exitCode, null, 'still running');
  assert.ok(!machine.lines.some((line) => /asked for a restart/.test(line)));
  // The flag is still set for the agent to read (and reading clears it).
  const agent = await createAuthedClients((await harness.cloud()).url, {
    partId: part.partId,
    secret: part.secret,
  });
  assert.equal((await agent.robot.needsRestart({ id: part.partId })).mustRestart, true);
  assert.equal(await machine.stop(), 0);
});
