/**
 * End to end: a real machine-server process fetches its configuration from a real cloud; the data
 * manager configured there captures a fake sensor and a fake camera and syncs them; the readings and
 * images become queryable with the owner's API key. A capture config change reaches the machine and
 * the data manager follows it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestCloud, type TestCloud } from '@mcloud/cloud/testing';
import { createSdkRobotClient } from '@mcloud/sdk-testkit';
import { DataManagerClient } from '@viamrobotics/sdk';
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
    config: {
      cloud: { app_address: t.url, id: part.partId, secret: part.secret },
      network: { bind_address: 'localhost:0' },
    },
    args: ['-disable-mdns'],
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

  // The machine API serves DataManagerService to the real SDK (authenticated with the org API key,
  // which the cloud hands the machine as an api-key auth handler).
  const serving = await machine.waitForLine(/\tserving\t/);
  const apiUrl = (JSON.parse(serving.split('\t').at(-1) as string) as { url: string }).url;
  const robot = await createSdkRobotClient({
    host: apiUrl,
    transport: 'grpc-web',
    credentials: { type: 'api-key', authEntity: t.bootstrap.api_key_id, payload: t.bootstrap.api_key },
  });
  try {
    const dataManager = new DataManagerClient(robot, 'data-manager');
    await dataManager.sync();
    const { id: datasetId } = await part.owner.dataset.createDataset({
      name: 'e2e-uploads',
      organizationId: t.bootstrap.organization_id,
    });
    const bytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);
    await dataManager.uploadBinaryDataToDatasets(bytes, ['manual'], [datasetId], 1 as never);
    const uploaded = (await binaryItems(part.owner, part.partId, '')).filter((item) =>
      item.fileName.includes('datasetUpload'),
    );
    assert.equal(uploaded.length, 1);
    assert.deepEqual([...(uploaded[0]?.binary ?? [])], [...bytes]);
    assert.ok(uploaded[0]?.tags.includes('manual') && uploaded[0]?.tags.includes('e2e'));
    assert.equal(uploaded[0]?.fileExt, '.jpeg');
    const leftovers = await listFiles(`${machine.viamHome}/capture/datasetUpload`);
    assert.deepEqual(leftovers, [], 'the staged upload file is removed');
  } finally {
    await robot.disconnect();
  }
});
