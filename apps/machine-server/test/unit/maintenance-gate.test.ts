import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonValue } from '../../src/json.ts';
import { createSilentLogger, type Logger } from '../../src/logging/logger.ts';
import type { ResourceLookup } from '../../src/machine-host.ts';
import { checkMaintenanceWindow } from '../../src/maintenance/maintenance-gate.ts';
import { type Sensor, sensorApi } from '../../src/resources/apis/sensor.ts';
import { createResourceName, formatResourceName } from '../../src/resources/resource-name.ts';

/** A lookup holding one sensor `maint` whose readings come from `read`. */
function lookupWith(read: (signal: AbortSignal) => Promise<Record<string, JsonValue>>): ResourceLookup {
  const sensor: Sensor = {
    name: createResourceName(sensorApi, 'maint'),
    getReadings: ({ signal }) => read(signal ?? new AbortController().signal),
    doCommand: async () => ({}),
    close: async () => {},
  };
  const key = formatResourceName(sensor.name);
  return {
    names: () => [sensor.name],
    get: (name) => (formatResourceName(name) === key ? sensor : undefined),
    findByShortName: () => sensor,
  };
}

const maintenance = { sensorName: 'rdk:component:sensor/maint', maintenanceAllowedKey: 'ok' };

function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return { ...createSilentLogger(), errors, error: (message) => void errors.push(message) };
}

/** The decision for `config` with sensor `maint` reading through `read`, and the errors it logged. */
async function decide(
  config: Parameters<typeof checkMaintenanceWindow>[0],
  read: (signal: AbortSignal) => Promise<Record<string, JsonValue>>,
  signal = AbortSignal.timeout(5000),
) {
  const logger = recordingLogger();
  const decision = await checkMaintenanceWindow(config, lookupWith(read), logger, signal);
  return { decision, errors: logger.errors };
}

describe('maintenance window (A8)', () => {
  it('allows only when the reading at the key is boolean true', async () => {
    const cases: [Record<string, JsonValue>, boolean, RegExp][] = [
      [{ ok: true }, true, /ok is true/],
      [{ ok: false }, false, /ok is false/],
      [{ ok: 'true' }, false, /not a boolean/],
      [{ ok: 1 }, false, /not a boolean/],
      [{ other: true }, false, /no key ok/],
    ];
    for (const [readings, allowed, reason] of cases) {
      const { decision } = await decide(maintenance, async () => readings);
      assert.equal(decision.allowed, allowed, JSON.stringify(readings));
      assert.match(decision.reason, reason);
    }
  });

  it('a read error blocks; a missing sensor or an unparsable name allows, with an error logged', async () => {
    const { decision: failing } = await decide(maintenance, async () => {
      throw new Error('i2c bus gone');
    });
    assert.deepEqual(failing, {
      allowed: false,
      reason: 'reading the maintenance sensor failed: i2c bus gone',
    });

    const missing = await decide(
      { ...maintenance, sensorName: 'rdk:component:sensor/elsewhere' },
      async () => ({
        ok: false,
      }),
    );
    assert.equal(missing.decision.allowed, true);
    assert.match(missing.errors.join(), /maintenance sensor not found/);

    const badName = await decide({ ...maintenance, sensorName: 'maint' }, async () => ({ ok: false }));
    assert.equal(badName.decision.allowed, true);
    assert.match(badName.errors.join(), /cannot be parsed/);

    const { decision: none } = await decide(undefined, async () => ({}));
    assert.equal(none.allowed, true);
  });

  it('a sensor that does not answer within 5 s blocks', async () => {
    const started = performance.now();
    const { decision } = await decide(
      maintenance,
      (signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(new Error('read aborted')), { once: true });
        }),
      AbortSignal.timeout(20_000),
    );
    const elapsedMs = performance.now() - started;
    assert.equal(decision.allowed, false);
    assert.match(decision.reason, /reading the maintenance sensor failed/);
    assert.ok(elapsedMs >= 4900 && elapsedMs < 8000, `decided after ${Math.round(elapsedMs)} ms`);
  });
});
