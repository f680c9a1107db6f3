/**
 * Real cloud (embedded PostgreSQL) + real machine-server processes: boot from the cloud (cache
 * written 0600), a config change applied through the poll (push off) and through the push (poll
 * slow), and an offline boot from the cache when the cloud is unreachable.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type CloudPart, fakeSensors, setPartConfig } from '../support/cloud-machine-fixtures.ts';
import { useCloudForMachines } from '../support/cloud-machine-harness.ts';

const harness = useCloudForMachines();

describe('machine-server managed by the cloud', () => {
  let part: CloudPart;
  let firstDir: string;

  it('boots from the cloud, caches the config (0600) and applies a change through the poll', async () => {
    part = await harness.createPart('poll-machine', { components: fakeSensors(3) });
    const machine = await harness.startPartMachine(part, {
      refreshInterval: '1s',
      args: ['-debug'],
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    });
    firstDir = machine.dir;
    const applied = await machine.waitForLine(/initial configuration applied/);
    assert.match(applied, /"built":3,"failed":0/);
    const cache = path.join(machine.viamHome, `cached_cloud_config_${part.partId}.json`);
    assert.equal((await stat(cache)).mode & 0o777, 0o600);
    const cached = JSON.parse(await readFile(cache, 'utf8')) as {
      components: unknown[];
      cloud: { fqdn: string };
    };
    assert.equal(cached.components.length, 3);
    assert.ok(cached.cloud.fqdn);

    const mark = machine.lines.length;
    const started = performance.now();
    await setPartConfig(part, {
      components: [...fakeSensors(3), { name: 'added', api: 'rdk:component:sensor', model: 'fake' }],
    });
    await machine.waitForLine(/resource built.*rdk:component:sensor\/added/, 15_000, mark);
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 5000, `poll every 1 s applied the change in ${Math.round(elapsed)} ms`);
    assert.equal(
      machine.lines.slice(mark).filter((l) => /resource built/.test(l)).length,
      1,
      'only the added resource is built',
    );
    assert.equal(await machine.stop(), 0);
  });

  it('boots offline from the cache when the cloud cannot be reached', async () => {
    const unreachable = {
      cloud: { app_address: 'http://127.0.0.1:9', id: part.partId, secret: part.secret },
    };
    const machine = await harness.startMachine({
      config: unreachable,
      dir: firstDir,
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    });
    await machine.waitForLine(/could not apply new cloud config; using cached version/, 20_000);
    const applied = await machine.waitForLine(/initial configuration applied/, 20_000);
    assert.match(applied, /"built":4,"failed":0/);
    assert.equal(await machine.stop(), 0);
  });

  it('deletes a cache that cannot be read and starts with nothing while the cloud is unreachable', async () => {
    const cache = path.join(firstDir, 'viam-home', `cached_cloud_config_${part.partId}.json`);
    await writeFile(cache, '{"components": [', { mode: 0o600 });
    const machine = await harness.startMachine({
      config: { cloud: { app_address: 'http://127.0.0.1:9', id: part.partId, secret: part.secret } },
      dir: firstDir,
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    });
    await machine.waitForLine(/error reading the configuration from the cloud/, 20_000);
    const deadline = Date.now() + 10_000;
    while ((await stat(cache).catch(() => undefined)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(await stat(cache).catch(() => undefined), undefined, 'the unreadable cache is deleted');
    assert.ok(!machine.lines.some((l) => /initial configuration applied|resource built/.test(l)));
    assert.equal(await machine.stop(), 0);
  });

  it('applies a pushed change at once (the poll is 60 s)', async () => {
    const pushed = await harness.createPart('push-machine', { components: fakeSensors(2) });
    const machine = await harness.startPartMachine(pushed, { refreshInterval: '60s', args: ['-debug'] });
    await machine.waitForLine(/initial configuration applied/);
    await machine.waitForLine(/machine connection open/);
    const mark = machine.lines.length;
    const started = performance.now();
    await setPartConfig(pushed, {
      components: [...fakeSensors(2), { name: 'pushed', api: 'rdk:component:camera', model: 'fake' }],
    });
    await machine.waitForLine(/resource built.*rdk:component:camera\/pushed/, 10_000, mark);
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 3000, `push applied the change in ${Math.round(elapsed)} ms`);
    assert.equal(await machine.stop(), 0);
  });

  it('holds a change back while the maintenance sensor says no, and /restart_status follows it', async (test) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'machine-server-test-'));
    test.after(() => rm(dir, { recursive: true, force: true }));
    const switchFile = path.join(dir, 'maintenance.json');
    await writeFile(switchFile, JSON.stringify({ allowed: false }));
    const base = [
      {
        name: 'maint',
        api: 'rdk:component:sensor',
        model: 'fake',
        attributes: { readings_file: switchFile },
      },
    ];
    const maintenance = { sensor_name: 'rdk:component:sensor/maint', maintenance_allowed_key: 'allowed' };
    const gated = await harness.createPart('maintenance-machine', { components: base, maintenance });
    const machine = await harness.startPartMachine(gated, {
      refreshInterval: '1s',
      args: ['-debug'],
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
      dir,
    });
    await machine.waitForLine(/initial configuration applied/);
    const serving = await machine.waitForLine(/serving/);
    const url = /"url":"([^"]+)"/.exec(serving)?.[1];
    assert.ok(url, serving);
    const restartStatus = async () =>
      ((await (await fetch(`${url}/restart_status`)).json()) as { restart_allowed: boolean }).restart_allowed;
    assert.equal(await restartStatus(), false);

    const mark = machine.lines.length;
    await setPartConfig(gated, {
      components: [...base, { name: 'later', api: 'rdk:component:sensor', model: 'fake' }],
      maintenance,
    });
    await machine.waitForLine(/Reconfigure NOT allowed by maintenance sensor/, 15_000, mark);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.ok(
      !machine.lines.slice(mark).some((l) => /resource built.*sensor\/later/.test(l)),
      'blocked while not allowed',
    );

    await writeFile(switchFile, JSON.stringify({ allowed: true }));
    await machine.waitForLine(/resource built.*sensor\/later/, 15_000, mark);
    assert.ok(machine.lines.slice(mark).some((l) => /Reconfigure allowed by maintenance sensor/.test(l)));
    assert.equal(await restartStatus(), true);
    assert.equal(await machine.stop(), 0);
  });
});
