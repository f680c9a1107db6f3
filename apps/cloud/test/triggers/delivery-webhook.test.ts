import assert from 'node:assert/strict';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, test } from 'node:test';
import type { Clock } from '../../src/domain/shared/clock.ts';
import type { TriggerDeliveryInput, TriggerEventFacts } from '../../src/domain/triggers/trigger-delivery.ts';
import { triggerDeliveryJob } from '../../src/domain/triggers/trigger-delivery.ts';
import { addJob } from '../../src/infra/jobs/job-queue.ts';
import { newMachine, ownerOf, type TestMachine } from '../machines/machine-fixtures.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  attemptsOf,
  deliveryInput,
  fastDelivery,
  type Receiver,
  recordDelivery,
  sleep,
  startReceiver,
  waitFor,
  waitForDeliveryStatus,
} from './delivery-fixtures.ts';

let nowMs = Date.now();
const clock: Clock = { nowMs: () => nowMs };
let t: TestCloud;
let owner: AuthedClients;
let machine: TestMachine;
let receiver: Receiver;

before(async () => {
  t = await startTestCloud({ clock, configure: fastDelivery });
  owner = await ownerOf(t);
  machine = await newMachine(owner, t.bootstrap.location_id, 'rover-7');
  receiver = await startReceiver();
});
after(async () => {
  await receiver?.close();
  await t?.stop();
});

const dataFacts: TriggerEventFacts = {
  kind: 'data',
  data: {
    componentName: 'my-sensor',
    componentType: 'rdk:component:sensor',
    methodName: 'Readings',
    dataType: 'tabular',
    minTimeReceived: '2026-11-21T02:00:00.000Z',
    maxTimeReceived: '2026-11-21T02:00:05.000Z',
    data: {
      metadata: { received_at: '2026-11-21T02:00:05.000Z', requested_at: '2026-11-21T02:00:04.900Z' },
      data: { readings: { cpu: 93.5, coordinate: { latitude: 40.1 } } },
    },
    triggerCondition: { evals: [{ operator: 'gt', value: { cpu: 50 } }] },
  },
};

function input(overrides: Partial<TriggerDeliveryInput>): TriggerDeliveryInput {
  return deliveryInput(t, machine, { destination: `${receiver.url}/hook`, ...overrides }, new Date(nowMs));
}

function requestsTo(path: string) {
  return receiver.requests.filter((r) => r.url === path);
}

async function partLogs(loggerName: string) {
  const { logs } = await owner.app.getRobotPartLogs({ id: machine.partId, levels: ['error'] });
  return logs.filter((l) => l.loggerName === loggerName);
}

function expectPlacementHeaders(headers: IncomingHttpHeaders) {
  assert.equal(headers['org-id'], t.bootstrap.organization_id);
  assert.equal(headers['organization-name'], 'default');
  assert.equal(headers['location-id'], t.bootstrap.location_id);
  assert.equal(headers['location-name'], 'default');
  assert.equal(headers['part-id'], machine.partId);
  assert.equal(headers['part-name'], 'rover-7-main');
  assert.equal(headers['machine-name'], 'rover-7');
  assert.equal(headers['robot-id'], machine.robotId);
  assert.match(String(headers['user-agent']), /^MachineCloud-Triggers\//);
}

test('part_online / part_offline: GET with every header and no body; the delivery and its attempt are recorded', async () => {
  for (const eventType of ['part_online', 'part_offline'] as const) {
    const path = `/status-${eventType}`;
    const id = await recordDelivery(t, input({ eventType, destination: `${receiver.url}${path}` }));
    const delivery = await waitForDeliveryStatus(t, id);
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.attemptCount, 1);
    assert.equal(delivery.lastStatusCode, 200);
    assert.equal(delivery.deliveredAt?.getTime(), nowMs);
    const [request] = requestsTo(path);
    assert.ok(request);
    assert.equal(request.method, 'GET');
    assert.equal(request.body, '');
    expectPlacementHeaders(request.headers);
    assert.equal(request.headers['content-type'], undefined);
    const attempts = await attemptsOf(t, id);
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.status_code, a.error]),
      [[1, 200, null]],
    );
  }
});

test('part_data_ingested and conditional_data_ingested: POST with the spec body keys; logs: a JSON array', async () => {
  const ingested = await recordDelivery(
    t,
    input({
      eventType: 'part_data_ingested',
      destination: `${receiver.url}/data`,
      facts: {
        kind: 'data',
        data: { ...dataFacts.data, dataType: 'binary', fileId: 'file-123', data: undefined },
      },
    }),
  );
  const conditional = await recordDelivery(
    t,
    input({
      eventType: 'conditional_data_ingested',
      destination: `${receiver.url}/conditional`,
      facts: dataFacts,
    }),
  );
  const logs = await recordDelivery(
    t,
    input({
      eventType: 'conditional_logs_ingested',
      destination: `${receiver.url}/logs`,
      facts: {
        kind: 'logs',
        entries: [
          {
            time: '2026-11-21T02:00:01.000Z',
            level: 'error',
            loggerName: 'rdk.motor',
            message: 'stalled',
            caller: { File: 'm.go', Line: 3 },
            stack: 'trace',
            fields: [{ Key: 'n', Integer: 1 }],
          },
          { time: '2026-11-21T02:00:02.000Z', level: 'warn', loggerName: 'rdk', message: 'hot' },
        ],
      },
    }),
  );
  for (const id of [ingested, conditional, logs])
    assert.equal((await waitForDeliveryStatus(t, id)).status, 'delivered');

  const [data] = requestsTo('/data');
  assert.ok(data);
  assert.equal(data.method, 'POST');
  assert.equal(data.headers['content-type'], 'application/json');
  expectPlacementHeaders(data.headers);
  assert.deepEqual(JSON.parse(data.body), {
    component_name: 'my-sensor',
    component_type: 'rdk:component:sensor',
    method_name: 'Readings',
    machine_name: 'rover-7',
    location_name: 'default',
    org_name: 'default',
    data_type: 'binary',
    min_time_received: '2026-11-21T02:00:00.000Z',
    max_time_received: '2026-11-21T02:00:05.000Z',
    file_id: 'file-123',
  });

  const [cond] = requestsTo('/conditional');
  assert.ok(cond);
  assert.equal(cond.method, 'POST');
  expectPlacementHeaders(cond.headers);
  assert.deepEqual(JSON.parse(cond.body), {
    component_name: 'my-sensor',
    component_type: 'rdk:component:sensor',
    method_name: 'Readings',
    machine_name: 'rover-7',
    location_name: 'default',
    org_name: 'default',
    data_type: 'tabular',
    trigger_condition: { evals: [{ operator: 'gt', value: { cpu: 50 } }] },
    data: {
      metadata: { received_at: '2026-11-21T02:00:05.000Z', requested_at: '2026-11-21T02:00:04.900Z' },
      data: { readings: { cpu: 93.5, coordinate: { latitude: 40.1 } } },
    },
  });

  const [log] = requestsTo('/logs');
  assert.ok(log);
  assert.equal(log.method, 'POST');
  expectPlacementHeaders(log.headers);
  assert.deepEqual(JSON.parse(log.body), [
    {
      time: '2026-11-21T02:00:01.000Z',
      level: 'error',
      logger_name: 'rdk.motor',
      message: 'stalled',
      caller: { File: 'm.go', Line: 3 },
      stack: 'trace',
      fields: [{ Key: 'n', Integer: 1 }],
    },
    { time: '2026-11-21T02:00:02.000Z', level: 'warn', logger_name: 'rdk', message: 'hot' },
  ]);
});

/** Standard Webhooks verification written from the spec (standardwebhooks.com), independent of the cloud's code. */
function verifyStandardWebhook(
  secret: string,
  headers: IncomingHttpHeaders,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): void {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string')
    throw new Error('missing required headers');
  if (!/^\d+$/.test(timestamp)) throw new Error('invalid timestamp');
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds)
    throw new Error('timestamp outside tolerance');
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  for (const versioned of signatures.split(' ')) {
    const [version, signature] = versioned.split(',');
    if (version !== 'v1' || !signature) continue;
    const given = Buffer.from(signature, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
  }
  throw new Error('no matching signature');
}

test('signed webhooks carry Standard Webhooks headers an independent verifier accepts; tampering and replays are rejected; the id is stable across retries', async () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let failFirst = true;
  receiver.respond = (request, res) => {
    if (request.url === '/signed' && failFirst) {
      failFirst = false;
      res.statusCode = 503;
      res.end();
      return;
    }
    res.end('ok');
  };
  const id = await recordDelivery(
    t,
    input({
      eventType: 'conditional_data_ingested',
      destination: `${receiver.url}/signed`,
      facts: dataFacts,
      signingSecret: secret,
    }),
  );
  const get = await recordDelivery(
    t,
    input({ eventType: 'part_offline', destination: `${receiver.url}/signed-get`, signingSecret: secret }),
  );
  assert.equal((await waitForDeliveryStatus(t, id)).status, 'delivered');
  assert.equal((await waitForDeliveryStatus(t, get)).status, 'delivered');
  const nowSeconds = Math.floor(nowMs / 1000);
  const attempts = requestsTo('/signed');
  assert.equal(attempts.length, 2);
  for (const request of attempts) {
    assert.equal(request.headers['webhook-id'], id);
    verifyStandardWebhook(secret, request.headers, request.body, nowSeconds);
  }
  const [getRequest] = requestsTo('/signed-get');
  assert.ok(getRequest);
  verifyStandardWebhook(secret, getRequest.headers, '', nowSeconds);
  const request = attempts[1];
  assert.ok(request);
  assert.throws(
    () => verifyStandardWebhook(secret, request.headers, request.body.replace('93.5', '93.6'), nowSeconds),
    /no matching/,
  );
  assert.throws(
    () =>
      verifyStandardWebhook(
        secret,
        { ...request.headers, 'webhook-id': randomBytes(8).toString('hex') },
        request.body,
        nowSeconds,
      ),
    /no matching/,
  );
  assert.throws(
    () =>
      verifyStandardWebhook(
        `whsec_${randomBytes(32).toString('base64')}`,
        request.headers,
        request.body,
        nowSeconds,
      ),
    /no matching/,
  );
  // A replay ten minutes later falls outside the receiver's tolerance.
  assert.throws(
    () => verifyStandardWebhook(secret, request.headers, request.body, nowSeconds + 600),
    /tolerance/,
  );
  receiver.respond = (_request, res) => res.end('ok');
});

test('a 404 is final: one attempt, no retry, and the spec error line in the part logs', async () => {
  receiver.respond = (request, res) => {
    res.statusCode = request.url === '/missing' ? 404 : 200;
    res.end('nope');
  };
  const id = await recordDelivery(
    t,
    input({
      triggerName: 'gone-hook',
      eventType: 'part_data_ingested',
      destination: `${receiver.url}/missing`,
      facts: dataFacts,
    }),
  );
  const delivery = await waitForDeliveryStatus(t, id);
  assert.equal(delivery.status, 'failed');
  assert.equal(delivery.lastStatusCode, 404);
  assert.equal(delivery.lastError, 'unretryable status code 404 (Not Found)');
  await sleep(1_500);
  assert.equal(requestsTo('/missing').length, 1);
  const lines = await waitFor(async () => {
    const found = await partLogs('app.trigger.gone-hook');
    return found.length > 0 ? found : undefined;
  });
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.level, 'error');
  assert.equal(
    lines[0]?.message,
    `Failed to send webhook notification for trigger "gone-hook" (giving up), URL: ${receiver.url}/missing, ` +
      `PartID: ${machine.partId}, Component: rdk:component:sensor/my-sensor, Method: Readings, ` +
      'TriggerType: part_data_ingested, NotificationType: webhook, ' +
      'Error: unretryable status code 404 (Not Found), ResponseCode: 404',
  );
  receiver.respond = (_request, res) => res.end('ok');
});

test('a receiver that is down is retried with backoff until it comes back; each failed attempt logs a line', async () => {
  const down = await startReceiver();
  const port = down.port;
  await down.close();
  const id = await recordDelivery(
    t,
    input({ triggerName: 'flaky-hook', destination: `http://127.0.0.1:${port}/back` }),
  );
  const retrying = await waitForDeliveryStatus(t, id, ['retrying']);
  assert.ok(retrying.nextAttemptAt);
  await waitFor(async () => ((await attemptsOf(t, id)).length >= 2 ? true : undefined));
  const back = await startReceiver(port);
  try {
    const delivered = await waitForDeliveryStatus(t, id);
    assert.equal(delivered.status, 'delivered');
    assert.ok(delivered.attemptCount >= 3, `attempts: ${delivered.attemptCount}`);
    assert.equal(back.requests.length, 1);
    const attempts = await attemptsOf(t, id);
    assert.equal(attempts.length, delivered.attemptCount);
    for (const failed of attempts.slice(0, -1)) {
      assert.equal(failed.status_code, null);
      assert.match(failed.error ?? '', /^request failed: ECONNREFUSED/);
    }
    assert.equal(attempts.at(-1)?.status_code, 200);
    const lines = await waitFor(async () => {
      const found = await partLogs('app.trigger.flaky-hook');
      return found.length >= delivered.attemptCount - 1 ? found : undefined;
    });
    assert.equal(lines.length, delivered.attemptCount - 1);
    for (const line of lines)
      assert.match(line.message, /\(will retry\).*Error: request failed: ECONNREFUSED.*, ResponseCode: 0$/);
  } finally {
    await back.close();
  }
});

test('5xx and 429 honour Retry-After; 408 is retried; other 4xx are final', async () => {
  let calls = 0;
  receiver.respond = (request, res) => {
    if (request.url === '/later') {
      calls += 1;
      if (calls === 1) {
        res.statusCode = 429;
        res.setHeader('Retry-After', '1');
        res.end();
        return;
      }
    }
    if (request.url === '/teapot') res.statusCode = 418;
    if (request.url === '/slow-down' && requestsTo('/slow-down').length === 1) res.statusCode = 408;
    res.end();
  };
  const later = await recordDelivery(t, input({ destination: `${receiver.url}/later` }));
  const teapot = await recordDelivery(t, input({ destination: `${receiver.url}/teapot` }));
  const slow = await recordDelivery(t, input({ destination: `${receiver.url}/slow-down` }));
  assert.equal((await waitForDeliveryStatus(t, later)).status, 'delivered');
  const [first, second] = requestsTo('/later');
  assert.ok(first && second);
  assert.ok(second.atMs - first.atMs >= 950, `retried after ${second.atMs - first.atMs} ms`);
  const failed = await waitForDeliveryStatus(t, teapot);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.attemptCount, 1);
  assert.equal((await waitForDeliveryStatus(t, slow)).status, 'delivered');
  assert.equal(requestsTo('/slow-down').length, 2);
  receiver.respond = (_request, res) => res.end('ok');
});

test('a request without an answer times out and is retried; no attempt is made after the retry window', async () => {
  receiver.respond = (request, res) => {
    if (request.url === '/hang') return; // never answers
    res.end();
  };
  const id = await recordDelivery(
    t,
    input({ triggerName: 'hang-hook', destination: `${receiver.url}/hang` }),
  );
  const retrying = await waitForDeliveryStatus(t, id, ['retrying']);
  const [first] = await attemptsOf(t, id);
  assert.equal(first?.error, 'no complete response within 1000 ms');
  assert.equal(retrying.firstAttemptAt?.getTime(), nowMs);
  // A day and a bit passes (on the cloud's clock): the next failure ends the delivery.
  nowMs += 25 * 3_600_000;
  const failed = await waitForDeliveryStatus(t, id, ['failed']);
  assert.match(
    failed.lastError ?? '',
    /^no complete response within 1000 ms; gave up after \d+ attempts over 24 h$/,
  );
  // The failure line is written right after the attempt commits.
  await waitFor(async () =>
    (await partLogs('app.trigger.hang-hook')).some((l) => l.message.includes('(giving up)'))
      ? true
      : undefined,
  );
  receiver.respond = (_request, res) => res.end('ok');
});

test('HTTP Basic credentials in the URL become an Authorization header and appear nowhere else', async () => {
  receiver.respond = (request, res) => {
    res.statusCode = request.url === '/basic-fail' ? 500 : 200;
    res.end();
  };
  const base = receiver.url.replace('http://', 'http://hook-user:s3cr%3At-pass@');
  const ok = await recordDelivery(t, input({ destination: `${base}/basic` }));
  const failing = await recordDelivery(
    t,
    input({ triggerName: 'basic-hook', destination: `${base}/basic-fail` }),
  );
  assert.equal((await waitForDeliveryStatus(t, ok)).status, 'delivered');
  const [request] = requestsTo('/basic');
  assert.ok(request);
  assert.equal(
    request.headers.authorization,
    `Basic ${Buffer.from('hook-user:s3cr:t-pass').toString('base64')}`,
  );
  await waitFor(async () => ((await attemptsOf(t, failing)).length >= 2 ? true : undefined));
  const lines = await waitFor(async () => {
    const found = await partLogs('app.trigger.basic-hook');
    return found.length >= 1 ? found : undefined;
  });
  const stored = JSON.stringify({
    lines: lines.map((l) => l.message),
    attempts: await attemptsOf(t, failing),
  });
  assert.ok(!stored.includes('s3cr'), stored);
  assert.ok(!stored.includes('hook-user'), stored);
  assert.match(lines[0]?.message ?? '', new RegExp(`URL: ${receiver.url}/basic-fail,`));
  receiver.respond = (_request, res) => res.end('ok');
});

test('a delivered delivery is not sent again when its job runs twice', async () => {
  const id = await recordDelivery(t, input({ destination: `${receiver.url}/once` }));
  await waitForDeliveryStatus(t, id);
  await addJob(t.cloud.deps.db, triggerDeliveryJob, { deliveryId: id });
  await addJob(t.cloud.deps.db, triggerDeliveryJob, { deliveryId: id });
  await sleep(500);
  assert.equal(requestsTo('/once').length, 1);
  assert.equal((await attemptsOf(t, id)).length, 1);
});
