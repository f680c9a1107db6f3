/**
 * Issue 4, machine-server item 1 and "Bad input", with a real cloud and real machine-server processes:
 * a cloud configuration the machine cannot validate is rejected with the path of the offending field
 * while the previous configuration keeps serving; one the cloud itself refuses (FailedPrecondition)
 * is logged as malformed and changes nothing; and without `cloud.refresh_interval` the machine checks
 * for a new configuration every 15 seconds (not the reference's 10).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { SensorClient } from '@viamrobotics/sdk';
import { type CloudPart, fakeSensors, setPartConfig } from '../support/cloud-machine-fixtures.ts';
import {
  ownerKeyCredential,
  servingUrl,
  useCloudForMachines,
  withMachineClient,
} from '../support/cloud-machine-harness.ts';
import type { MachineProcess } from '../support/machine-process.ts';

const harness = useCloudForMachines();

const thermo = (readings: JsonValue): JsonObject => ({
  name: 'thermo',
  api: 'rdk:component:sensor',
  model: 'fake',
  attributes: { readings },
});

describe('cloud configurations that cannot be used', () => {
  let part: CloudPart;
  let machine: MachineProcess;
  let url: string;

  const readThermo = async () =>
    withMachineClient(url, ownerKeyCredential(await harness.cloud()), (client) =>
      new SensorClient(client, 'thermo').getReadings(),
    );

  before(async () => {
    part = await harness.createPart('bad-config-machine', { components: [thermo({ temp: 21 })] });
    machine = await harness.startPartMachine(part, {
      refreshInterval: '1s',
      bindAddress: 'localhost:0',
      args: ['-debug', '-disable-mdns'],
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    });
    await machine.waitForLine(/initial configuration applied/);
    url = await servingUrl(machine);
    assert.deepEqual(await readThermo(), { temp: 21 });
  });

  it('one the machine cannot validate is rejected with the field path; the previous one keeps serving', async () => {
    const mark = machine.lines.length;
    await setPartConfig(part, { components: [thermo(7), ...fakeSensors(1)] });
    const rejected = await machine.waitForLine(
      /reconfiguration aborted: invalid configuration/,
      15_000,
      mark,
    );
    assert.match(rejected, /components\[0\]\.attributes\.readings: must be an object/);
    assert.match(rejected, /\tERROR\t/);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // at least one more poll
    assert.deepEqual(await readThermo(), { temp: 21 });
    const after = machine.lines.slice(mark);
    assert.ok(!after.some((l) => /resource built|closing|configuration applied/.test(l)), after.join('\n'));

    await setPartConfig(part, { components: [thermo({ temp: 22 })] });
    await machine.waitForLine(/\tconfiguration applied/, 15_000, mark);
    assert.deepEqual(await readThermo(), { temp: 22 });
  });

  it('one the cloud refuses (FailedPrecondition) is logged as malformed and changes nothing', async () => {
    const mark = machine.lines.length;
    await setPartConfig(part, { components: [{ name: 'thermo', api: 'sensor', model: 'fake' }] });
    const refused = await machine.waitForLine(/error reading the configuration from the cloud/, 15_000, mark);
    assert.match(refused, /\tERROR\t/);
    assert.match(refused, /components\[0\]\.api/);
    assert.deepEqual(await readThermo(), { temp: 22 });
    assert.ok(!machine.lines.slice(mark).some((l) => /resource built|closing/.test(l)));
    // Fixed in the cloud: applied with the next check.
    await setPartConfig(part, { components: [thermo({ temp: 23 })] });
    await machine.waitForLine(/\tconfiguration applied/, 15_000, mark);
    assert.deepEqual(await readThermo(), { temp: 23 });
  });
});

describe('the configuration check interval', () => {
  it('is 15 seconds without cloud.refresh_interval (first check after a fifth of it)', async () => {
    const part = await harness.createPart('default-interval-machine', { components: fakeSensors(1) });
    const machine = await harness.startPartMachine(part, {
      refreshInterval: null,
      args: ['-debug'],
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    });
    await machine.waitForLine(/initial configuration applied/);
    const appliedAt = performance.now();
    // The first check comes 3 s after start-up; change the config after it, so the next check applies it.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const mark = machine.lines.length;
    await setPartConfig(part, {
      components: [...fakeSensors(1), { name: 'later', api: 'rdk:component:sensor', model: 'fake' }],
    });
    await machine.waitForLine(/resource built.*sensor\/later/, 30_000, mark);
    const seconds = (performance.now() - appliedAt) / 1000;
    // 3 s + 15 s after start-up (a 10 s interval would have applied it at ~13 s).
    assert.ok(seconds >= 16.5 && seconds < 24, `applied ${seconds.toFixed(1)} s after start-up`);
    assert.equal(await machine.stop(), 0);
  });
});
