/**
 * End to end: a real machine-server process fetches its configuration from a real cloud; the data
 * manager configured there captures a fake sensor and a fake camera and syncs them; the readings and
 * images become queryable with the owner's API key. A capture config change reaches the machine and
 * the data manager follows it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestCloud, type TestCloud } from '@mcloud/cloud/testing';
import { type MachineProcess, startMachineProcess } from '../support/machine-process.ts';
import { binaryItems, createMachinePart, type MachinePart, tabularReadings } from './cloud-fixtures.ts';
import { listFiles, waitFor } from './data-fixtures.ts';

let t: TestCloud;
let part: MachinePart;
let machine: MachineProcess | undefined;

before(async () => {
  t = await startTestCloud();
  part = await createMachinePart(t, 'data-e2e');
});
after(async () => {
  await machine?.stop();
  await machine?.cleanup();
  await t?.stop();
});

function robotConfig(sensorMethods: object[]) {
  return {
    components: [
      {
        name: 'thermo',
        api: 'rdk:component:sensor',
        model: 'fake',
        attributes: { readings: { temperature: 21.5, room: 'lab' } },
        service_configs: [{ type: 'data_manager', attributes: { capture_methods: sensorMethods } }],
      },
      {
        name: 'cam',
        api: 'rdk:component:camera',
        model: 'fake',
        attributes: { width: 32, height: 24, mime_type: 'image/png' },
        service_configs: [
          {
            type: 'data_manager',
            attributes: { capture_methods: [{ method: 'ReadImage', capture_frequency_hz: 2 }] },
          },
        ],
      },
    ],
    services: [
      {
        name: 'data-manager',
        api: 'rdk:service:data_manager',
        model: 'builtin',
        attributes: { sync_interval_mins: 0.005, tags: ['e2e'] },
      },
    ],
  };
}

async function saveConfig(config: object) {
  const { parts } = await part.owner.app.getRobotParts({ robotId: part.robotId });
  const main = parts[0];
  if (!main) throw new Error('no main part');
  await part.owner.app.updateRobotPart({ id: main.id, name: main.name, robotConfig: config as never });
}

test('a cloud-managed machine-server captures and syncs through the configured data manager', async () => {
  await saveConfig(robotConfig([{ method: 'Readings', capture_frequency_hz: 10 }]));
  machine = await startMachineProcess({
    config: { cloud: { app_address: t.url, id: part.partId, secret: part.secret } },
  });
  await machine.waitForLine(/initial configuration applied/, 60_000);

  const readings = await waitFor(
    async () => {
      const found = await tabularReadings(part.owner, part.partId, 'thermo');
      return found.length >= 10 ? found : undefined;
    },
    30_000,
    'sensor readings in the cloud',
  );
  assert.deepEqual(readings[0]?.data, { readings: { temperature: 21.5, room: 'lab' } });
  assert.deepEqual(readings[0]?.tags, ['e2e']);

  const images = await waitFor(
    async () => {
      const found = await binaryItems(part.owner, part.partId, 'cam');
      return found.length >= 2 ? found : undefined;
    },
    30_000,
    'camera images in the cloud',
  );
  assert.equal(images[0]?.mimeType, 'image/png');
  assert.equal(images[0]?.fileExt, '.png');
  assert.deepEqual([...(images[0]?.binary.subarray(1, 4) ?? [])], [...Buffer.from('PNG')]);

  // Capture files live under $VIAM_HOME/capture/<api>/<name>/<method> until synced.
  const captured = await listFiles(`${machine.viamHome}/capture`);
  for (const file of captured) {
    assert.match(
      file,
      /^rdk_component_(sensor\/thermo\/Readings|camera\/cam\/ReadImage)\/[^/]+\.(prog|capture)$/,
    );
  }

  // A new capture method on the sensor (DoCommand) reaches the machine and the data manager follows.
  await saveConfig(
    robotConfig([
      { method: 'Readings', capture_frequency_hz: 10 },
      {
        method: 'DoCommand',
        capture_frequency_hz: 5,
        additional_params: { docommand_input: { calls: true } },
      },
    ]),
  );
  const commands = await waitFor(
    async () => {
      const found = (await tabularReadings(part.owner, part.partId, 'thermo')).filter(
        (entry) => (entry.data as { calls?: number }).calls !== undefined,
      );
      return found.length >= 2 ? found : undefined;
    },
    45_000,
    'DoCommand captures after the config change',
  );
  assert.deepEqual(commands[0]?.methodParameters, { docommand_input: { calls: true } });
});
