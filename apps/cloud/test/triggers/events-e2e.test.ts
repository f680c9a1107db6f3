import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { ViamClient } from '@viamrobotics/sdk';
import { machineClients, newMachine, ownerOf, type TestMachine } from '../machines/machine-fixtures.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  logsAndOnlineTriggers,
  ownerSdk,
  setTriggers,
  settle,
  startWebhookReceiver,
  type WebhookReceiver,
  webhookTrigger,
} from './events-fixtures.ts';

/** Events end to end: the real SDK / RobotService → the cloud → a real local HTTP receiver. */

let t: TestCloud;
let owner: AuthedClients;
let sdk: ViamClient;
let receiver: WebhookReceiver;
let machine: TestMachine;

before(async () => {
  receiver = await startWebhookReceiver();
  t = await startTestCloud();
  owner = await ownerOf(t);
  sdk = await ownerSdk(t.url, t.bootstrap);
  machine = await newMachine(owner, t.bootstrap.location_id, 'e2e-bot');
  await setTriggers(owner, machine.partId, [
    {
      name: 'hot',
      event: {
        type: 'conditional_data_ingested',
        conditional: {
          data_capture_method: 'sensor:thermo:Readings',
          conditions: { evals: [{ operator: 'gte', value: { temperature: { celsius: 30 } } }] },
        },
      },
      notifications: [{ type: 'webhook', value: `${receiver.url}/hot` }],
    },
    webhookTrigger(
      'images',
      { type: 'part_data_ingested', data_ingested: { data_types: ['binary'] } },
      receiver.url,
      'images',
    ),
    ...logsAndOnlineTriggers(receiver.url),
  ]);
  await settle();
});
after(async () => {
  await t?.stop();
  await receiver?.close();
});

function assertPlacementHeaders(headers: Record<string, string | string[] | undefined>): void {
  assert.equal(headers['org-id'], t.bootstrap.organization_id);
  assert.equal(headers['location-id'], t.bootstrap.location_id);
  assert.equal(headers['part-id'], machine.partId);
  assert.equal(headers['robot-id'], machine.robotId);
  assert.equal(headers['machine-name'], 'e2e-bot');
}

test('a synced reading that meets the condition → POST to the receiver with the body keys', async () => {
  const now = Date.now();
  await sdk.dataClient.tabularDataCaptureUpload(
    [
      { readings: { temperature: { celsius: 21 } } },
      { readings: { temperature: { celsius: 31.5 } } },
    ] as never,
    machine.partId,
    'rdk:component:sensor',
    'thermo',
    'Readings',
    [
      [new Date(now - 2000), new Date(now - 1990)],
      [new Date(now - 1000), new Date(now - 990)],
    ],
  );
  const [request] = await receiver.waitFor(1, (r) => r.path === '/hot');
  assert.ok(request);
  assert.equal(request.method, 'POST');
  assertPlacementHeaders(request.headers);
  const body = JSON.parse(request.body);
  assert.equal(body.component_name, 'thermo');
  assert.equal(body.component_type, 'rdk:component:sensor');
  assert.equal(body.method_name, 'Readings');
  assert.equal(body.machine_name, 'e2e-bot');
  assert.deepEqual(body.trigger_condition, {
    evals: [{ operator: 'gte', value: { temperature: { celsius: 30 } } }],
  });
  assert.deepEqual(body.data.data, { readings: { temperature: { celsius: 31.5 } } });
  assert.equal(Date.parse(body.data.metadata.requested_at), now - 1000);
  assert.equal(Date.parse(body.data.metadata.received_at), now - 990);

  // Below the threshold: nothing more arrives.
  await sdk.dataClient.tabularDataCaptureUpload(
    [{ readings: { temperature: { celsius: 12 } } }] as never,
    machine.partId,
    'rdk:component:sensor',
    'thermo',
    'Readings',
    [[new Date(now - 500), new Date(now - 490)]],
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver.requests.filter((r) => r.path === '/hot').length, 1);
});

test('a binary upload → part_data_ingested POST with file_id', async () => {
  const now = Date.now();
  const id = await sdk.dataClient.binaryDataCaptureUpload(
    new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 5, 6]),
    machine.partId,
    'rdk:component:camera',
    'cam',
    'ReadImage',
    '.jpg',
    [new Date(now - 100), new Date(now - 90)],
  );
  const [request] = await receiver.waitFor(1, (r) => r.path === '/images');
  const body = JSON.parse(request?.body ?? '{}');
  assert.equal(body.file_id, String(id).split('/').at(-1));
  assert.equal(body.component_name, 'cam');
  assert.equal(body.data_type, 'binary');
  assert.equal(Date.parse(body.min_time_received), now - 90);
  assert.equal(Date.parse(body.max_time_received), now - 90);
});

test('machine contact → part_online GET; error logs → a JSON array of the matching entries', async () => {
  const robot = await machineClients(t.url, machine);
  await robot.robot.log({
    id: machine.partId,
    logs: [
      {
        level: 'info',
        message: 'fine',
        loggerName: 'rdk',
        host: 'pi',
        time: timestampFromMs(Date.now()),
        fields: [],
      },
      {
        level: 'error',
        message: 'motor stalled',
        loggerName: 'rdk.motor',
        host: 'pi',
        time: timestampFromMs(Date.now()),
        fields: [],
      },
    ],
  });
  const [online] = await receiver.waitFor(1, (r) => r.path === '/online');
  assert.equal(online?.method, 'GET');
  assertPlacementHeaders(online?.headers ?? {});
  const [logs] = await receiver.waitFor(1, (r) => r.path === '/logs');
  const entries = JSON.parse(logs?.body ?? '[]') as { message: string; level: string }[];
  assert.deepEqual(
    entries.map((e) => [e.level, e.message]),
    [['error', 'motor stalled']],
  );
});
