import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { noSmtpError } from '../../src/domain/triggers/delivery/trigger-delivery-handler.ts';
import type { TriggerDeliveryInput } from '../../src/domain/triggers/trigger-delivery.ts';
import { newMachine, ownerOf, type TestMachine } from '../machines/machine-fixtures.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { deliveryInput, fastDelivery, recordDelivery, waitForDeliveryStatus } from './delivery-fixtures.ts';

interface ReceivedMail {
  from: string;
  to: string[];
  headers: string;
  text: string;
  html: string;
}

let t: TestCloud;
let withoutSmtp: TestCloud;
let owner: AuthedClients;
let machine: TestMachine;
let smtp: SMTPServer;
const mails: ReceivedMail[] = [];
let tempFailuresLeft = 0;

/** Undoes quoted-printable soft breaks and escapes (enough for the ASCII bodies we send). */
function decodeQuotedPrintable(text: string): string {
  return text
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    .replace(/[\u0080-\u00ff]+/g, (bytes) => Buffer.from(bytes, 'latin1').toString('utf8'));
}

function parseMail(raw: string): Pick<ReceivedMail, 'headers' | 'text' | 'html'> {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const headers = head.replace(/\r\n[ \t]+/g, ' ');
  const body = rest.join('\r\n\r\n');
  const boundary = /boundary="?([^";\r\n]+)"?/.exec(headers)?.[1] ?? '';
  const parts = body.split(`--${boundary}`).slice(1, -1);
  const partOf = (type: string) => {
    const part = parts.find((p) => p.includes(`Content-Type: ${type}`)) ?? '';
    return decodeQuotedPrintable(part.split('\r\n\r\n').slice(1).join('\r\n\r\n'));
  };
  return { headers, text: partOf('text/plain'), html: partOf('text/html') };
}

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('bounce@')) {
        callback(Object.assign(new Error('no such mailbox'), { responseCode: 550 }));
      } else if (address.address.startsWith('busy@') && tempFailuresLeft-- > 0) {
        callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
      } else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom;
        mails.push({
          from: from ? from.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          ...parseMail(Buffer.concat(chunks).toString('utf8')),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const port = (smtp.server.address() as AddressInfo).port;
  t = await startTestCloud({
    configure: (config) => ({
      ...fastDelivery(config),
      smtp: { url: `smtp://127.0.0.1:${port}`, from: 'Fleet Alerts <alerts@fleet.example>' },
    }),
  });
  withoutSmtp = await startTestCloud({ configure: fastDelivery });
  owner = await ownerOf(t);
  machine = await newMachine(owner, t.bootstrap.location_id, 'mailer');
});
after(async () => {
  await withoutSmtp?.stop();
  await t?.stop();
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
});

function input(overrides: Partial<TriggerDeliveryInput>): TriggerDeliveryInput {
  return deliveryInput(t, machine, {
    triggerName: 'mail-me',
    eventType: 'part_offline',
    notificationType: 'email',
    destination: 'ops@fleet.example',
    ...overrides,
  });
}

test('an email delivery: readable subject, text and HTML body with the facts, from the configured sender', async () => {
  const id = await recordDelivery(
    t,
    input({
      eventType: 'conditional_data_ingested',
      facts: {
        kind: 'data',
        data: {
          componentName: 'thermo',
          componentType: 'rdk:component:sensor',
          methodName: 'Readings',
          dataType: 'tabular',
          minTimeReceived: '2026-11-21T03:00:00.000Z',
          maxTimeReceived: '2026-11-21T03:00:01.000Z',
          data: {
            metadata: { received_at: '2026-11-21T03:00:01.000Z', requested_at: '2026-11-21T03:00:00.900Z' },
            data: { readings: { temperature: 81.5 } },
          },
          triggerCondition: { evals: [{ operator: 'gt', value: { temperature: 80 } }] },
        },
      },
    }),
  );
  const delivery = await waitForDeliveryStatus(t, id);
  assert.equal(delivery.status, 'delivered', delivery.lastError ?? '');
  assert.equal(delivery.lastStatusCode, 250);
  const mail = mails.find((m) => m.headers.toLowerCase().includes(`x-mcloud-delivery-id: ${id}`));
  assert.ok(mail, JSON.stringify(mails, null, 1));
  assert.equal(mail.from, 'alerts@fleet.example');
  assert.deepEqual(mail.to, ['ops@fleet.example']);
  assert.match(
    mail.headers,
    /Subject: \[default\] mail-me: machine mailer \(part mailer-main\) synced data that met the condition from rdk:component:sensor thermo/,
  );
  for (const fact of [
    'Trigger:',
    'conditional_data_ingested',
    machine.partId,
    machine.robotId,
    t.bootstrap.location_id,
    'Readings',
    '"temperature": 81.5',
    '"operator":"gt"',
    '{"temperature":80}',
  ]) {
    assert.ok(mail.text.includes(fact), `text lacks ${fact}:\n${mail.text}`);
  }
  assert.match(mail.html, /<th align="left">Machine<\/th><td>mailer \(/);
  assert.ok(mail.html.includes('&quot;temperature&quot;: 81.5'));
});

test('all_machine_owners goes to every organization owner (not to operators)', async () => {
  const organizationId = t.bootstrap.organization_id;
  const role = (authorizationId: string) => ({
    authorizationType: 'role',
    authorizationId,
    resourceType: 'organization',
    resourceId: organizationId,
    organizationId,
  });
  await owner.app.createOrganizationInvite({
    organizationId,
    email: 'boss@fleet.example',
    authorizations: [role('organization_owner')],
  });
  await owner.app.createOrganizationInvite({
    organizationId,
    email: 'co-owner@fleet.example',
    authorizations: [role('organization_owner')],
  });
  await owner.app.createOrganizationInvite({
    organizationId,
    email: 'operator@fleet.example',
    authorizations: [role('organization_operator')],
  });
  const id = await recordDelivery(t, input({ destination: 'all_machine_owners' }));
  assert.equal((await waitForDeliveryStatus(t, id)).status, 'delivered');
  const mail = mails.find((m) => m.headers.toLowerCase().includes(`x-mcloud-delivery-id: ${id}`));
  assert.ok(mail);
  assert.deepEqual(mail.to.sort(), ['boss@fleet.example', 'co-owner@fleet.example']);
  assert.match(
    mail.headers,
    /Subject: \[default\] mail-me: machine mailer \(part mailer-main\) went offline/,
  );
});

test('SMTP 5xx is final, 4xx is retried; without an SMTP server the delivery fails with a clear error', async () => {
  const bounced = await recordDelivery(t, input({ destination: 'bounce@fleet.example' }));
  const failed = await waitForDeliveryStatus(t, bounced);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.attemptCount, 1);
  assert.equal(failed.lastStatusCode, 550);
  assert.match(failed.lastError ?? '', /^SMTP 550: /);

  tempFailuresLeft = 1;
  const busy = await recordDelivery(t, input({ destination: 'busy@fleet.example' }));
  const delivered = await waitForDeliveryStatus(t, busy);
  assert.equal(delivered.status, 'delivered');
  assert.equal(delivered.attemptCount, 2);

  const other = withoutSmtp.bootstrap;
  const otherOwner = await ownerOf(withoutSmtp);
  const otherMachine = await newMachine(otherOwner, other.location_id, 'no-mail');
  const id = await recordDelivery(withoutSmtp, {
    ...input({}),
    organizationId: other.organization_id,
    locationId: other.location_id,
    robotId: otherMachine.robotId,
    partId: otherMachine.partId,
  });
  const noSmtp = await waitForDeliveryStatus(withoutSmtp, id);
  assert.equal(noSmtp.status, 'failed');
  assert.equal(noSmtp.lastError, noSmtpError);
  assert.match(noSmtp.lastError ?? '', /--smtp-url/);
});
