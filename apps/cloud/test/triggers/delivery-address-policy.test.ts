import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { newMachine, ownerOf, type TestMachine } from '../machines/machine-fixtures.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  attemptsOf,
  fastDelivery,
  type Receiver,
  recordDelivery,
  startReceiver,
  waitFor,
  waitForDeliveryStatus,
} from './delivery-fixtures.ts';

const clock: Clock = { nowMs: () => Date.now() };
let t: TestCloud;
let owner: AuthedClients;
let machine: TestMachine;
let receiver: Receiver;

before(async () => {
  t = await startTestCloud({
    clock,
    configure: (config) => {
      const fast = fastDelivery(config);
      return {
        ...fast,
        triggerDelivery: {
          ...fast.triggerDelivery,
          webhookAddressPolicy: { denyPrivate: true, allowCidrs: [] },
        },
      };
    },
  });
  owner = await ownerOf(t);
  machine = await newMachine(owner, t.bootstrap.location_id, 'rover-ssrf');
  receiver = await startReceiver();
});
after(async () => {
  await receiver?.close();
  await t?.stop();
});

function deliverTo(triggerName: string, destination: string) {
  return recordDelivery(t, {
    organizationId: t.bootstrap.organization_id,
    locationId: t.bootstrap.location_id,
    robotId: machine.robotId,
    partId: machine.partId,
    triggerName,
    eventType: 'part_online',
    notificationType: 'webhook',
    destination,
    signingSecret: undefined,
    facts: { kind: 'part-status', at: new Date().toISOString() },
    occurredAt: new Date(),
  });
}

test('under --webhook-deny-private a loopback receiver gets nothing: one final attempt, a clear error and log line', async () => {
  const id = await deliverTo('internal-hook', `http://user:pa55word@127.0.0.1:${receiver.port}/hook`);
  const failed = await waitForDeliveryStatus(t, id);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.attemptCount, 1);
  const attempts = await attemptsOf(t, id);
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0]?.status_code, null);
  assert.equal(
    attempts[0]?.error,
    'refused by the webhook address policy: 127.0.0.1 is loopback (denied by --webhook-deny-private; allow it with --webhook-allow-cidr)',
  );
  const lines = await waitFor(async () => {
    const { logs } = await owner.app.getRobotPartLogs({ id: machine.partId, levels: ['error'] });
    const found = logs.filter((l) => l.loggerName === 'app.trigger.internal-hook');
    return found.length > 0 ? found : undefined;
  });
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]?.message ?? '',
    /^Failed to send webhook notification for trigger "internal-hook" \(giving up\), URL: http:\/\/127\.0\.0\.1:\d+\/hook, .*Error: refused by the webhook address policy: 127\.0\.0\.1 is loopback .*, ResponseCode: 0$/,
  );
  assert.doesNotMatch(lines[0]?.message ?? '', /pa55word/);
  assert.equal(receiver.requests.length, 0);
});

test('an allow CIDR wins over deny-private: the same receiver gets the request', async () => {
  const settings = t.cloud.deps.config.triggerDelivery;
  const previous = settings.webhookAddressPolicy;
  settings.webhookAddressPolicy = { denyPrivate: true, allowCidrs: ['127.0.0.1/32'] };
  try {
    const id = await deliverTo('allowed-hook', `http://127.0.0.1:${receiver.port}/allowed`);
    const delivered = await waitForDeliveryStatus(t, id);
    assert.equal(delivered.status, 'delivered');
    assert.deepEqual(
      receiver.requests.map((r) => r.url),
      ['/allowed'],
    );
    // A name that resolves to loopback is checked by its resolved address (localhost → 127.0.0.1 or ::1).
    settings.webhookAddressPolicy = { denyPrivate: true, allowCidrs: [] };
    const byName = await deliverTo('named-hook', `http://localhost:${receiver.port}/named`);
    const refused = await waitForDeliveryStatus(t, byName);
    assert.equal(refused.status, 'failed');
    assert.match(
      refused.lastError ?? '',
      /^refused by the webhook address policy: localhost has address (127\.0\.0\.1|::1), which is loopback/,
    );
    assert.equal(receiver.requests.length, 1);
  } finally {
    settings.webhookAddressPolicy = previous;
  }
});
