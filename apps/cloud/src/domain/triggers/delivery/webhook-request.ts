import type { TriggerLogEntry } from '../trigger-delivery.ts';
import type { DeliveryRecord, PlacementNames } from './delivery-repository.ts';

/** The HTTP request of one webhook delivery, before signing. The URL carries no credentials. */
export interface WebhookRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  /** The exact bytes sent (and signed); "" for GET. */
  body: string;
}

export const webhookUserAgent = 'MachineCloud-Triggers/1.0';

/** A webhook URL split into the URL to send (no user-info) and its `Authorization: Basic` header. */
export function splitBasicCredentials(destination: string): {
  url: string;
  authorization: string | undefined;
} {
  const url = new URL(destination);
  if (!url.username && !url.password) return { url: url.toString(), authorization: undefined };
  const user = decodeLenient(url.username);
  const password = decodeLenient(url.password);
  url.username = '';
  url.password = '';
  const token = Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
  return { url: url.toString(), authorization: `Basic ${token}` };
}

/**
 * Service spec "Webhook requests": GET with headers only for part_online / part_offline; POST with the
 * JSON body keys for part_data_ingested / conditional_data_ingested; POST with a JSON array of log entries
 * for conditional_logs_ingested. Every header is sent on every request (a superset of the table).
 */
export function webhookRequestOf(delivery: DeliveryRecord, names: PlacementNames): WebhookRequest {
  const { url, authorization } = splitBasicCredentials(delivery.destination);
  const headers: Record<string, string> = {
    'User-Agent': webhookUserAgent,
    'Org-Id': delivery.organizationId,
    'Organization-Name': headerValue(names.organizationName),
    'Location-Id': delivery.locationId,
    'Location-Name': headerValue(names.locationName),
    'Part-Id': delivery.partId,
    'Part-Name': headerValue(names.partName),
    'Machine-Name': headerValue(names.machineName),
    'Robot-Id': delivery.robotId,
  };
  if (authorization) headers.Authorization = authorization;
  const facts = delivery.facts;
  if (facts.kind === 'part-status') return { method: 'GET', url, headers, body: '' };
  headers['Content-Type'] = 'application/json';
  if (facts.kind === 'logs') {
    return { method: 'POST', url, headers, body: JSON.stringify(facts.entries.map(logEntryJson)) };
  }
  const data = facts.data;
  const body: Record<string, unknown> = {
    component_name: data.componentName,
    component_type: data.componentType,
    method_name: data.methodName,
    machine_name: names.machineName,
    location_name: names.locationName,
    org_name: names.organizationName,
    data_type: data.dataType,
  };
  if (delivery.eventType === 'part_data_ingested') {
    body.min_time_received = data.minTimeReceived;
    body.max_time_received = data.maxTimeReceived;
    if (data.fileId !== undefined) body.file_id = data.fileId;
  } else {
    body.trigger_condition = data.triggerCondition ?? null;
  }
  if (data.data !== undefined) body.data = data.data;
  return { method: 'POST', url, headers, body: JSON.stringify(body) };
}

/** A log entry of the logs trigger's JSON array (snake_case like the other body keys). */
export function logEntryJson(entry: TriggerLogEntry): Record<string, unknown> {
  return {
    time: entry.time,
    level: entry.level,
    logger_name: entry.loggerName,
    message: entry.message,
    ...(entry.caller === undefined ? {} : { caller: entry.caller }),
    ...(entry.stack ? { stack: entry.stack } : {}),
    ...(entry.fields && entry.fields.length > 0 ? { fields: entry.fields } : {}),
  };
}

/** Percent-decoding that keeps a malformed sequence as written instead of throwing. */
function decodeLenient(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Header values must be Latin-1 without line breaks: other characters are percent-encoded. */
function headerValue(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : encodeURIComponent(text);
}
