/**
 * Issue 4, machine-server item 7 (machine-runtime.md A8) with a real cloud and a real machine-server:
 * while the maintenance sensor says no, a resource change is held back entirely (nothing built, the
 * config cache not rewritten), yet auth changes still apply (a new API key dials the machine); once
 * the sensor allows it, the next check applies the change and rewrites the cache. A restart the cloud
 * asks for (NeedsRestart) ignores the window.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { apiKeyRole } from '@mcloud/cloud/testing';
import { SensorClient } from '@viamrobotics/sdk';
import { createCloudPart, credentialsFile, setPartConfig } from '../support/cloud-machine-fixtures.ts';
import { dialMachine, servingUrl, useCloudForMachines } from '../support/cloud-machine-harness.ts';

const harness = useCloudForMachines();
let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'maintenance-window-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a blocked reconfiguration changes no resource and no cache, auth changes still apply; allowed later', async () => {
  const t = await harness.cloud();
  const part = await createCloudPart(t, 'maintenance-auth-machine');
  const switchFile = path.join(dir, 'maintenance.json');
  await writeFile(switchFile, JSON.stringify({ allowed: false }));
  const maintenance = { sensor_name: 'rdk:component:sensor/maint', maintenance_allowed_key: 'allowed' };
  const base = [
    { name: 'maint', api: 'rdk:component:sensor', model: 'fake', attributes: { readings_file: switchFile } },
  ];
  await setPartConfig(part, { components: base, maintenance });
  const machine = await harness.startMachine({
    config: { ...credentialsFile(t.url, part, '1s'), network: { bind_address: 'localhost:0' } },
    args: ['-debug', '-disable-mdns'],
    env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    dir,
  });
  await machine.waitForLine(/initial configuration applied/);
  const url = await servingUrl(machine);
  const cachePath = path.join(machine.viamHome, `cached_cloud_config_${part.partId}.json`);
  const cachedNames = async () =>
    (
      (JSON.parse(await readFile(cachePath, 'utf8')) as { components: { name: string }[] }).components ?? []
    ).map((component) => component.name);
  assert.deepEqual(await cachedNames(), ['maint']);

  const mark = machine.lines.length;
  await setPartConfig(part, {
    components: [...base, { name: 'later', api: 'rdk:component:sensor', model: 'fake' }],
    maintenance,
  });
  await machine.waitForLine(/Reconfigure NOT allowed by maintenance sensor/, 15_000, mark);

  // A new API key is an auth change: applied although the resource change is held back.
  const key = await part.owner.app.createKey({
    name: 'during-maintenance',
    authorizations: [apiKeyRole('robot', 'operator', part.robotId, t.bootstrap.organization_id)],
  });
  await machine.waitForLine(/but Cloud\/Auth\/Network config changes will be applied/, 15_000, mark);
  const client = await dialMachine(url, { type: 'api-key', authEntity: key.id, payload: key.key });
  try {
    assert.deepEqual(await new SensorClient(client, 'maint').getReadings(), { allowed: false });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.ok(!machine.lines.slice(mark).some((l) => /resource built/.test(l)), 'no resource built');
    assert.deepEqual(await cachedNames(), ['maint'], 'the cache is not rewritten while blocked');

    await writeFile(switchFile, JSON.stringify({ allowed: true }));
    await machine.waitForLine(/resource built.*sensor\/later/, 15_000, mark);
    assert.deepEqual(await cachedNames(), ['maint', 'later']);
    assert.equal(typeof (await new SensorClient(client, 'later').getReadings()), 'object');
  } finally {
    await client.disconnect();
  }
  assert.equal(await machine.stop(), 0);
});

test('a restart asked by the cloud (MarkPartForRestart) does not wait for the maintenance window', async () => {
  const t = await harness.cloud();
  const part = await createCloudPart(t, 'maintenance-restart-machine');
  const switchFile = path.join(dir, 'closed-window.json');
  await writeFile(switchFile, JSON.stringify({ allowed: false }));
  await setPartConfig(part, {
    components: [
      {
        name: 'maint',
        api: 'rdk:component:sensor',
        model: 'fake',
        attributes: { readings_file: switchFile },
      },
    ],
    maintenance: { sensor_name: 'rdk:component:sensor/maint', maintenance_allowed_key: 'allowed' },
  });
  const machine = await harness.startMachine({ config: credentialsFile(t.url, part, '15s') });
  await machine.waitForLine(/machine connection open/);
  const url = await servingUrl(machine);
  assert.equal(
    ((await (await fetch(`${url}/restart_status`)).json()) as { restart_allowed: boolean }).restart_allowed,
    false,
  );
  const exited = new Promise<number | null>((resolve) => machine.child.once('exit', resolve));
  await part.owner.app.markPartForRestart({ partId: part.partId });
  assert.equal(await exited, 0);
  assert.ok(machine.lines.some((line) => /the cloud asked for a restart; shutting down/.test(line)));
});
