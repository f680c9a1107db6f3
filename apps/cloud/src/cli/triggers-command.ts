import { parseArgs } from 'node:util';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { ConnectError } from '@connectrpc/connect';
import { triggerDeliveriesPb } from '@mcloud/protocol';
import { ConfigError } from '../config/cloud-config.ts';
import { deliveryStatuses } from '../domain/triggers/delivery/delivery-repository.ts';
import { remoteClient, remoteOptions, resolveRemoteTarget } from './remote-client.ts';

const { TriggerDeliveryStatus } = triggerDeliveriesPb;

export const triggersUsage = `  mcloud triggers deliveries --part ID [--trigger NAME] [--status pending|retrying|delivered|failed]
                             [--page-size N] [--page-token T] [--json] [REMOTE]
  mcloud triggers redeliver DELIVERY_ID [--json] [REMOTE]
      REMOTE: [--url URL --api-key-id ID --api-key=KEY] (default: MCLOUD_URL/MCLOUD_API_KEY_ID/MCLOUD_API_KEY,
              else bootstrap.json of --data-dir DIR)`;

/** `mcloud triggers deliveries|redeliver`: trigger deliveries of a running cloud (TriggerDeliveryService). */
export async function triggersCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const target = await resolveRemoteTarget(values);
  const connect = () => remoteClient(triggerDeliveriesPb.TriggerDeliveryService, target);
  try {
    if (sub === 'deliveries') {
      if (!values.part) throw new ConfigError('--part is required (the machine part ID)');
      if (positionals.length > 0)
        throw new ConfigError(`unexpected argument ${JSON.stringify(positionals[0])}`);
      const status = values.status;
      if (status !== undefined && !(deliveryStatuses as readonly string[]).includes(status)) {
        throw new ConfigError(
          `--status must be one of ${deliveryStatuses.join(', ')} (got ${JSON.stringify(status)})`,
        );
      }
      const pageSize = values['page-size'] === undefined ? 0 : Number(values['page-size']);
      if (!Number.isInteger(pageSize) || pageSize < 0) {
        throw new ConfigError(
          `--page-size must be a positive integer (got ${JSON.stringify(values['page-size'])})`,
        );
      }
      const response = await (await connect()).listTriggerDeliveries({
        partId: values.part,
        triggerName: values.trigger ?? '',
        status: status
          ? TriggerDeliveryStatus[status.toUpperCase() as keyof typeof TriggerDeliveryStatus]
          : 0,
        pageSize,
        pageToken: values['page-token'] ?? '',
      });
      if (values.json) {
        console.log(
          JSON.stringify({
            deliveries: response.deliveries.map(deliveryJson),
            next_page_token: response.nextPageToken,
          }),
        );
      } else {
        for (const delivery of response.deliveries) console.log(deliveryLine(delivery));
        if (response.deliveries.length === 0) console.log('no deliveries');
        if (response.nextPageToken) console.log(`more: --page-token ${response.nextPageToken}`);
      }
      return 0;
    }
    if (sub === 'redeliver') {
      const [id, ...extra] = positionals;
      if (!id) throw new ConfigError('the delivery ID is required: mcloud triggers redeliver DELIVERY_ID');
      if (extra.length > 0) throw new ConfigError(`unexpected argument ${JSON.stringify(extra[0])}`);
      const { delivery } = await (await connect()).redeliverTriggerDelivery({ id });
      if (!delivery) throw new Error('RedeliverTriggerDelivery answered without a delivery');
      console.log(
        values.json ? JSON.stringify(deliveryJson(delivery)) : `redelivering ${deliveryLine(delivery)}`,
      );
      return 0;
    }
    throw new ConfigError(`unknown triggers command ${JSON.stringify(sub ?? '')}\n${triggersUsage}`);
  } catch (error) {
    if (error instanceof ConnectError) {
      console.error(
        `mcloud: ${error.rawMessage} (${error.code === undefined ? 'error' : codeName(error.code)})`,
      );
      return 1;
    }
    throw error;
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      ...remoteOptions,
      part: { type: 'string' },
      trigger: { type: 'string' },
      status: { type: 'string' },
      'page-size': { type: 'string' },
      'page-token': { type: 'string' },
      json: { type: 'boolean' },
    },
    strict: true,
    allowPositionals: true,
  });
}

type Delivery = triggerDeliveriesPb.TriggerDelivery;

function statusName(status: number): string {
  return (TriggerDeliveryStatus[status] ?? 'UNSPECIFIED').toLowerCase();
}

function iso(value: Delivery['createdAt']): string {
  return value ? timestampDate(value).toISOString() : '';
}

function deliveryLine(d: Delivery): string {
  const code = d.lastStatusCode === undefined ? '' : ` code=${d.lastStatusCode}`;
  const error = d.lastError ? ` error=${JSON.stringify(d.lastError)}` : '';
  return `${iso(d.createdAt)}  ${d.id}  ${statusName(d.status).padEnd(9)}  ${d.triggerName}  ${d.eventType}  ${d.notificationType} ${d.destination}  attempts=${d.attemptCount}${code}${error}`;
}

function deliveryJson(d: Delivery) {
  return {
    id: d.id,
    organization_id: d.organizationId,
    location_id: d.locationId,
    robot_id: d.robotId,
    part_id: d.partId,
    trigger_name: d.triggerName,
    event_type: d.eventType,
    notification_type: d.notificationType,
    destination: d.destination,
    signed: d.signed,
    facts: d.facts ?? null,
    occurred_at: iso(d.occurredAt),
    created_at: iso(d.createdAt),
    status: statusName(d.status),
    attempt_count: d.attemptCount,
    next_attempt_at: d.nextAttemptAt ? iso(d.nextAttemptAt) : null,
    delivered_at: d.deliveredAt ? iso(d.deliveredAt) : null,
    last_status_code: d.lastStatusCode ?? null,
    last_error: d.lastError || null,
    redelivery_count: d.redeliveryCount,
    attempts: d.attempts.map((a) => ({
      attempt: a.attempt,
      started_at: iso(a.startedAt),
      duration_ms: a.durationMs,
      status_code: a.statusCode ?? null,
      error: a.error || null,
    })),
  };
}

function codeName(code: number): string {
  const names = [
    'ok',
    'canceled',
    'unknown',
    'invalid_argument',
    'deadline_exceeded',
    'not_found',
    'already_exists',
    'permission_denied',
    'resource_exhausted',
    'failed_precondition',
    'aborted',
    'out_of_range',
    'unimplemented',
    'internal',
    'unavailable',
    'data_loss',
    'unauthenticated',
  ];
  return names[code] ?? String(code);
}
