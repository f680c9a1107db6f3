/**
 * Issue 4, machine-server item 4 end to end: a real cloud, a real machine-server process and a real
 * module. A module resource logs the same warning 8 times in a row (DoCommand through the SDK); the
 * machine outputs it exactly 3 times plus one suppression notice — on its own output and in the cloud
 * (GetRobotPartLogs). With `disable_log_deduplication` pushed from the cloud, all of them pass.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { structFromJson } from '@mcloud/sdk-testkit';
import { type RobotClient, SensorClient } from '@viamrobotics/sdk';
import { counterExecutable } from '../modules/module-test-support.ts';
import {
  type CloudPart,
  createCloudPart,
  credentialsFile,
  setPartConfig,
} from '../support/cloud-machine-fixtures.ts';
import {
  dialMachine,
  ownerKeyCredential,
  servingUrl,
  useCloudForMachines,
} from '../support/cloud-machine-harness.ts';
import type { MachineProcess } from '../support/machine-process.ts';

const harness = useCloudForMachines();
let part: CloudPart;
let machine: MachineProcess;
let client: RobotClient;

const config = (disableLogDeduplication: boolean) => ({
  modules: [{ name: 'counter', type: 'local', executable_path: counterExecutable }],
  components: [{ name: 'valve', api: 'rdk:component:sensor', model: 'mcloud:example:counter' }],
  disable_log_deduplication: disableLogDeduplication,
});

before(async () => {
  const t = await harness.cloud();
  part = await createCloudPart(t, 'dedup-machine');
  await setPartConfig(part, config(false));
  machine = await harness.startMachine({
    config: { ...credentialsFile(t.url, part, '1s'), network: { bind_address: 'localhost:0' } },
    args: ['-disable-mdns'],
  });
  const url = await servingUrl(machine);
  await machine.waitForLine(/initial configuration applied/);
  client = await dialMachine(url, ownerKeyCredential(t));
});

after(async () => {
  await client?.disconnect();
});

/** The counter sensor's DoCommand `{log}` writes one entry through the module's logger. */
async function logWarnings(message: string, times: number): Promise<void> {
  const valve = new SensorClient(client, 'valve');
  for (let i = 0; i < times; i++) {
    await valve.doCommand(structFromJson({ log: { level: 'warn', message } }));
  }
}

const outputMessages = (from: number, text: string) =>
  machine.lines
    .slice(from)
    .map((line) => line.split('\t'))
    .filter((columns) => columns.slice(3).some((column) => column.includes(text)))
    // time, LEVEL, logger, [caller,] message[, fields]: module entries carry no caller.
    .map((columns) => `${columns[1]} ${columns.slice(3).find((column) => column.includes(text))}`);

async function cloudMessages(text: string, expected: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { logs } = await part.owner.app.getRobotPartLogs({ id: part.partId, filter: text, limit: 100n });
    const messages = logs.map((entry) => `${entry.level} ${entry.message}`).reverse();
    if (messages.length >= expected || Date.now() > deadline) return messages;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('noisy module logs through a real machine-server', () => {
  it('are output 3 times, then one suppression notice, on the machine and in the cloud', async () => {
    const mark = machine.lines.length;
    await logWarnings('valve pressure low', 8);
    const expected = [
      'WARN valve pressure low',
      'WARN valve pressure low',
      'WARN valve pressure low',
      'WARN Message logged 3 times; suppressing for rest of window (10s): valve pressure low',
    ];
    await machine.waitForLine(/suppressing for rest of window/, 10_000, mark);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(outputMessages(mark, 'valve pressure low'), expected);
    const stored = await cloudMessages('valve pressure low', 4);
    assert.deepEqual(
      stored,
      expected.map((line) => line.replace(/^WARN/, 'warn')),
    );
  });

  it('all pass with disable_log_deduplication from the cloud', async () => {
    let mark = machine.lines.length;
    await setPartConfig(part, config(true));
    await machine.waitForLine(/Noisy log deduplication is now disabled/, 15_000, mark);
    mark = machine.lines.length;
    await logWarnings('valve stuck open', 8);
    const deadline = Date.now() + 10_000;
    while (outputMessages(mark, 'valve stuck open').length < 8 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(outputMessages(mark, 'valve stuck open'), Array(8).fill('WARN valve stuck open'));
    assert.equal((await cloudMessages('valve stuck open', 8)).length, 8);
  });
});
