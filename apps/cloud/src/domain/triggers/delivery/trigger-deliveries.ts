import { withTransaction } from '../../../infra/postgres/database.ts';
import { requireRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument, notFound } from '../../errors.ts';
import { type FleetContext, organizationIdsOf } from '../../fleet/fleet-context.ts';
import { requirePart } from '../../fleet/parts.ts';
import { requireUuid } from '../../validate.ts';
import { redactUrl } from '../trigger-config.ts';
import {
  type DeliveryAttemptRecord,
  type DeliveryRecord,
  type DeliveryStatus,
  findDelivery,
  listAttempts,
  listDeliveries,
  resetForRedelivery,
} from './delivery-repository.ts';
import { enqueueDelivery } from './trigger-delivery-handler.ts';

/** A delivery as operators see it: destination without credentials, no signing secret, with its attempts. */
export interface TriggerDeliveryView extends Omit<DeliveryRecord, 'signingSecret'> {
  signed: boolean;
  attempts: DeliveryAttemptRecord[];
}

export interface TriggerDeliveryPage {
  deliveries: TriggerDeliveryView[];
  /** Empty when there is nothing older. */
  nextPageToken: string;
}

export const deliveryListLimits = {
  pageSizeDefault: 50,
  pageSizeMax: 500,
  triggerNameMaxChars: 200,
} as const;

/**
 * Deliveries of one part, newest first, with their attempts. Needs operator on the part's machine; a part
 * of another organization is NotFound.
 */
export async function listTriggerDeliveries(
  ctx: FleetContext,
  principal: Principal,
  input: {
    partId: string;
    triggerName: string;
    status: DeliveryStatus | undefined;
    pageSize: number;
    pageToken: string;
  },
): Promise<TriggerDeliveryPage> {
  const part = await requirePart(ctx, principal, input.partId, 'operator', 'part_id');
  if (input.triggerName.length > deliveryListLimits.triggerNameMaxChars) {
    throw invalidArgument(
      'trigger_name',
      `must be at most ${deliveryListLimits.triggerNameMaxChars} characters`,
      input.triggerName,
    );
  }
  const pageSize = input.pageSize === 0 ? deliveryListLimits.pageSizeDefault : input.pageSize;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > deliveryListLimits.pageSizeMax) {
    throw invalidArgument(
      'page_size',
      `must be from 1 to ${deliveryListLimits.pageSizeMax} (0: default)`,
      pageSize,
    );
  }
  const rows = await listDeliveries(ctx.db, {
    organizationId: part.organizationId,
    partId: part.id,
    triggerName: input.triggerName === '' ? undefined : input.triggerName,
    status: input.status,
    before: input.pageToken ? decodePageToken(input.pageToken) : undefined,
    limit: pageSize + 1,
  });
  const page = rows.slice(0, pageSize);
  const attempts = await listAttempts(
    ctx.db,
    part.organizationId,
    page.map((d) => d.id),
  );
  const last = page.at(-1);
  return {
    deliveries: page.map((d) => viewOf(d, attempts.get(d.id) ?? [])),
    nextPageToken: rows.length > pageSize && last ? encodePageToken(last.createdAtUs, last.id) : '',
  };
}

/**
 * Sends a delivered or failed delivery again (a new round: same id, fresh retry window, attempts kept).
 * Needs operator on the part's machine; FailedPrecondition while it is still pending or retrying.
 */
export async function redeliverTriggerDelivery(
  ctx: FleetContext,
  principal: Principal,
  deliveryId: string,
): Promise<TriggerDeliveryView> {
  const id = requireUuid('id', deliveryId);
  const found = await findDelivery(ctx.db, id, organizationIdsOf(principal));
  if (!found) throw notFound('trigger delivery', id);
  requireRole(
    principal,
    {
      organizationId: found.organizationId,
      locationId: found.locationId,
      robotId: found.robotId,
      partId: found.partId,
    },
    'operator',
    { what: 'trigger delivery', id },
  );
  const reset = await withTransaction(ctx.db, async (tx) => {
    const row = await resetForRedelivery(tx, found);
    if (row) await enqueueDelivery(tx, id, 0);
    return row;
  });
  if (!reset) {
    throw new DomainError(
      'FailedPrecondition',
      `trigger delivery ${JSON.stringify(id)} is ${found.status === 'delivered' || found.status === 'failed' ? 'being redelivered already' : found.status}: only delivered or failed deliveries can be redelivered`,
    );
  }
  const attempts = await listAttempts(ctx.db, reset.organizationId, [id]);
  return viewOf(reset, attempts.get(id) ?? []);
}

function viewOf(delivery: DeliveryRecord, attempts: DeliveryAttemptRecord[]): TriggerDeliveryView {
  const { signingSecret, ...rest } = delivery;
  return {
    ...rest,
    destination:
      delivery.notificationType === 'webhook' ? redactUrl(delivery.destination) : delivery.destination,
    signed: signingSecret !== null,
    attempts,
  };
}

function encodePageToken(createdAtUs: string, id: string): string {
  return Buffer.from(JSON.stringify({ t: createdAtUs, i: id })).toString('base64url');
}

function decodePageToken(token: string): { createdAtUs: string; id: string } {
  if (token.length <= 200) {
    try {
      const value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
        t?: unknown;
        i?: unknown;
      };
      if (typeof value.t === 'string' && /^-?\d{1,19}$/.test(value.t) && typeof value.i === 'string') {
        return { createdAtUs: value.t, id: requireUuid('page_token', value.i) };
      }
    } catch {
      // reported below
    }
  }
  throw invalidArgument('page_token', 'is not a token returned by ListTriggerDeliveries', token);
}
