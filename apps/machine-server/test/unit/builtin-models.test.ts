/**
 * Issue 4, machine-server item 2: the built-in models worth having on a real machine, built through
 * the model registry as the resource manager builds them — the host sensor (CPU, memory, disk,
 * temperature of this computer; and from injected /proc and thermal files, exactly), the fake camera's
 * generated JPEG and PNG frames, and the simulated fake motor (on an injected clock).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import jpeg from 'jpeg-js';
import { createFakeCameraRegistration } from '../../src/builtins/fake-camera.ts';
import { createFakeMotorRegistration } from '../../src/builtins/fake-motor.ts';
import { createHostSensorRegistration } from '../../src/builtins/host-sensor.ts';
import type { Clock } from '../../src/clock.ts';
import { systemClock } from '../../src/clock.ts';
import { parseMachineConfig } from '../../src/config/machine-config.ts';
import { createSilentLogger } from '../../src/logging/logger.ts';
import type { Camera } from '../../src/resources/apis/camera.ts';
import type { Motor } from '../../src/resources/apis/motor.ts';
import type { Sensor } from '../../src/resources/apis/sensor.ts';
import { createDependencies } from '../../src/resources/dependencies.ts';
import type { ModelRegistration } from '../../src/resources/model-registry.ts';
import type { Resource } from '../../src/resources/resource.ts';

const call = { signal: AbortSignal.timeout(10_000) };

async function build<T extends Resource>(
  registration: ModelRegistration,
  component: Record<string, unknown>,
): Promise<T> {
  const config = parseMachineConfig({ components: [component] }, { source: 'local' }).components[0];
  assert.ok(config);
  await registration.validate?.(config, call.signal);
  return (await registration.build({
    config,
    dependencies: createDependencies([]),
    logger: createSilentLogger(),
    signal: call.signal,
  })) as T;
}

let scratch: string;
before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'builtins-'));
});
after(() => rm(scratch, { recursive: true, force: true }));

describe('host sensor (rdk:builtin:host)', () => {
  it('reads this computer: CPU, load, memory, disk and uptime', async () => {
    const sensor = await build<Sensor>(createHostSensorRegistration(), {
      name: 'pi',
      api: 'rdk:component:sensor',
      model: 'host',
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const readings = (await sensor.getReadings(call)) as Record<string, number>;
    assert.ok(readings.cpu_percent !== undefined && readings.cpu_percent >= 0 && readings.cpu_percent <= 100);
    assert.ok((readings.memory_total_bytes ?? 0) > 64 * 1024 * 1024, JSON.stringify(readings));
    assert.ok((readings.memory_available_bytes ?? -1) >= 0);
    assert.ok((readings.disk_total_bytes ?? 0) > 0 && (readings.disk_free_bytes ?? -1) >= 0);
    assert.ok((readings.uptime_seconds ?? 0) > 0);
    assert.equal(typeof readings.load_1m, 'number');
  });

  it('computes CPU use between readings, memory and the hottest thermal zone from the files', async () => {
    const proc = path.join(scratch, 'proc');
    const thermal = path.join(scratch, 'thermal');
    await mkdir(proc, { recursive: true });
    for (const [zone, milli] of [
      ['thermal_zone0', '42000'],
      ['thermal_zone1', '55500'],
    ] as const) {
      await mkdir(path.join(thermal, zone), { recursive: true });
      await writeFile(path.join(thermal, zone, 'temp'), `${milli}\n`);
    }
    await mkdir(path.join(thermal, 'cooling_device0'), { recursive: true });
    // user nice system idle iowait …: 1000 jiffies total, 800 idle+iowait
    await writeFile(path.join(proc, 'stat'), 'cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n');
    await writeFile(
      path.join(proc, 'meminfo'),
      'MemTotal:       2000 kB\nMemFree: 1 kB\nMemAvailable:    500 kB\n',
    );
    const sensor = await build<Sensor>(createHostSensorRegistration({ proc, thermal }), {
      name: 'pi',
      api: 'rdk:component:sensor',
      model: 'host',
      attributes: { disk_path: scratch },
    });
    // Next sample: +1000 jiffies of which 350 idle+iowait → 65 % busy.
    await writeFile(path.join(proc, 'stat'), 'cpu  500 0 350 950 200 0 0 0 0 0\n');
    const readings = await sensor.getReadings(call);
    assert.equal(readings.cpu_percent, 65);
    assert.equal(readings.memory_total_bytes, 2000 * 1024);
    assert.equal(readings.memory_available_bytes, 500 * 1024);
    assert.equal(readings.memory_used_percent, 75);
    assert.equal(readings.temperature_celsius, 55.5);
  });

  it('omits the temperature without thermal zones; a disk_path that cannot be read is rejected with its path', async () => {
    const registration = createHostSensorRegistration({ proc: '/proc', thermal: path.join(scratch, 'none') });
    const sensor = await build<Sensor>(registration, {
      name: 'vm',
      api: 'rdk:component:sensor',
      model: 'host',
    });
    assert.equal('temperature_celsius' in (await sensor.getReadings(call)), false);
    await assert.rejects(
      build(registration, {
        name: 'vm',
        api: 'rdk:component:sensor',
        model: 'host',
        attributes: { disk_path: path.join(scratch, 'missing') },
      }),
      /components\[0\]\.attributes\.disk_path: cannot statfs/,
    );
  });
});

describe('fake camera', () => {
  it('generates frames that decode as JPEG and PNG of the configured size, changing over time', async () => {
    const camera = await build<Camera>(createFakeCameraRegistration(systemClock), {
      name: 'cam',
      api: 'rdk:component:camera',
      model: 'fake',
      attributes: { width: 64, height: 48 },
    });
    const first = await camera.getImage('', call);
    assert.equal(first.mimeType, 'image/jpeg');
    const decoded = jpeg.decode(first.image, { useTArray: true });
    assert.deepEqual([decoded.width, decoded.height], [64, 48]);
    const second = await camera.getImage('image/jpeg', call);
    assert.notDeepEqual(Buffer.from(second.image), Buffer.from(first.image), 'frames change');
    const png = await camera.getImage('image/png', call);
    assert.deepEqual([...png.image.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(Buffer.from(png.image).readUInt32BE(16), 64, 'IHDR width');
    assert.equal(Buffer.from(png.image).readUInt32BE(20), 48, 'IHDR height');
    await assert.rejects(
      camera.getImage('image/gif', call),
      /mime_type: fake camera serves image\/jpeg, image\/png/,
    );
    const { images } = await camera.getImages([], call);
    assert.equal(images[0]?.sourceName, 'cam');
  });
});

describe('fake motor', () => {
  it('simulates position from time: SetPower spins until Stop, ResetZeroPosition', async () => {
    let nowMs = 1_000_000;
    const clock: Clock = { now: () => new Date(nowMs) };
    const motor = await build<Motor>(createFakeMotorRegistration(clock), {
      name: 'wheel',
      api: 'rdk:component:motor',
      model: 'fake',
      attributes: { max_rpm: 60 },
    });
    assert.deepEqual(await motor.isPowered(call), { isOn: false, powerPct: 0 });
    await motor.setPower(0.5, call);
    assert.deepEqual(await motor.isPowered(call), { isOn: true, powerPct: 0.5 });
    nowMs += 60_000; // one minute at 30 rpm
    assert.equal(Math.round(await motor.getPosition(call)), 30);
    assert.equal(await motor.isMoving(call), true);
    await motor.stop(call);
    assert.equal(await motor.isMoving(call), false);
    nowMs += 60_000;
    assert.equal(Math.round(await motor.getPosition(call)), 30);
    await motor.resetZeroPosition(0, call);
    assert.equal(await motor.getPosition(call), 0);
  });
});
