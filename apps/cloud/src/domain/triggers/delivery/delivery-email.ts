import type { MailMessage } from '../../../infra/mail/mailer.ts';
import type { DeliveryRecord, PlacementNames } from './delivery-repository.ts';
import { logEntryJson } from './webhook-request.ts';

const eventWords: Record<DeliveryRecord['eventType'], string> = {
  part_online: 'is online',
  part_offline: 'went offline',
  part_data_ingested: 'synced data',
  conditional_data_ingested: 'synced data that met the condition',
  conditional_logs_ingested: 'logged',
};

const maxLogEntriesShown = 50;

/**
 * The email of one delivery: a subject naming the trigger, the machine and what happened, and a body
 * (plain text and simple HTML) with the same facts a webhook carries.
 */
export function deliveryEmailOf(
  delivery: DeliveryRecord,
  names: PlacementNames,
  recipients: readonly string[],
): MailMessage {
  const machine = names.machineName || delivery.robotId;
  const part = names.partName || delivery.partId;
  const facts = delivery.facts;
  let what = eventWords[delivery.eventType];
  if (facts.kind === 'data') what += ` from ${facts.data.componentType} ${facts.data.componentName}`;
  if (facts.kind === 'logs') {
    const levels = [...new Set(facts.entries.map((e) => e.level))].join('/');
    what += ` ${facts.entries.length} ${levels} entr${facts.entries.length === 1 ? 'y' : 'ies'}`;
  }
  const subject = `[${names.organizationName}] ${delivery.triggerName}: machine ${machine} (part ${part}) ${what}`;
  const rows: Array<[string, string]> = [
    ['Trigger', delivery.triggerName],
    ['Event', delivery.eventType],
    ['Occurred at', delivery.occurredAt.toISOString()],
    ['Organization', `${names.organizationName} (${delivery.organizationId})`],
    ['Location', `${names.locationName} (${delivery.locationId})`],
    ['Machine', `${names.machineName} (${delivery.robotId})`],
    ['Part', `${names.partName} (${delivery.partId})`],
  ];
  let details = '';
  if (facts.kind === 'data') {
    const d = facts.data;
    rows.push(
      ['Component', `${d.componentType} ${d.componentName}`],
      ['Method', d.methodName],
      ['Data type', d.dataType],
      ['Received', `${d.minTimeReceived} to ${d.maxTimeReceived}`],
    );
    if (d.fileId) rows.push(['File ID', d.fileId]);
    if (d.triggerCondition !== undefined) rows.push(['Condition', JSON.stringify(d.triggerCondition)]);
    if (d.data !== undefined) details = JSON.stringify(d.data, null, 2);
  } else if (facts.kind === 'logs') {
    const shown = facts.entries.slice(0, maxLogEntriesShown).map(logEntryJson);
    details = shown
      .map((e) => `${e.time} ${String(e.level).toUpperCase()} ${e.logger_name}: ${e.message}`)
      .join('\n');
    if (facts.entries.length > shown.length)
      details += `\n... and ${facts.entries.length - shown.length} more`;
  }
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  const text = [
    subject,
    '',
    ...rows.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`),
    ...(details ? ['', details] : []),
    '',
    `Sent by Machine Cloud for trigger "${delivery.triggerName}" (delivery ${delivery.id}).`,
  ].join('\n');
  const html = [
    '<!doctype html><html><body style="font-family: sans-serif">',
    `<h2>${escapeHtml(subject)}</h2>`,
    '<table cellpadding="4">',
    ...rows.map(
      ([label, value]) => `<tr><th align="left">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`,
    ),
    '</table>',
    details ? `<pre>${escapeHtml(details)}</pre>` : '',
    `<p style="color: #666">Sent by Machine Cloud for trigger &quot;${escapeHtml(delivery.triggerName)}&quot; (delivery ${delivery.id}).</p>`,
    '</body></html>',
  ].join('\n');
  return {
    to: recipients,
    subject: subject.replace(/[\r\n]+/g, ' '),
    text,
    html,
    headers: { 'X-Mcloud-Delivery-Id': delivery.id },
  };
}

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}
