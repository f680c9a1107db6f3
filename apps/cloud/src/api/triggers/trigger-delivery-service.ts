import type { JsonObject } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { triggerDeliveriesPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import { invalidArgument } from '../../domain/errors.ts';
import type { DeliveryStatus } from '../../domain/triggers/delivery/delivery-repository.ts';
import {
  listTriggerDeliveries,
  redeliverTriggerDelivery,
  type TriggerDeliveryView,
} from '../../domain/triggers/delivery/trigger-deliveries.ts';
import { fleetContextOf } from '../app/fleet-messages.ts';
import { principalOf } from '../context.ts';

const { TriggerDeliveryStatus } = triggerDeliveriesPb;

const statusToProto: Record<DeliveryStatus, triggerDeliveriesPb.TriggerDeliveryStatus> = {
  pending: TriggerDeliveryStatus.PENDING,
  retrying: TriggerDeliveryStatus.RETRYING,
  delivered: TriggerDeliveryStatus.DELIVERED,
  failed: TriggerDeliveryStatus.FAILED,
};

function statusFromProto(status: triggerDeliveriesPb.TriggerDeliveryStatus): DeliveryStatus | undefined {
  if (status === TriggerDeliveryStatus.UNSPECIFIED) return undefined;
  const found = (Object.entries(statusToProto) as Array<[DeliveryStatus, number]>).find(
    ([, v]) => v === status,
  );
  if (!found) {
    throw invalidArgument(
      'status',
      'must be TRIGGER_DELIVERY_STATUS_PENDING, _RETRYING, _DELIVERED, _FAILED or unspecified',
      status,
    );
  }
  return found[0];
}

function deliveryToProto(d: TriggerDeliveryView) {
  return {
    id: d.id,
    organizationId: d.organizationId,
    locationId: d.locationId,
    robotId: d.robotId,
    partId: d.partId,
    triggerName: d.triggerName,
    eventType: d.eventType,
    notificationType: d.notificationType,
    destination: d.destination,
    signed: d.signed,
    facts: d.facts as unknown as JsonObject,
    occurredAt: timestampFromDate(d.occurredAt),
    createdAt: timestampFromDate(d.createdAt),
    status: statusToProto[d.status],
    attemptCount: d.attemptCount,
    ...(d.nextAttemptAt ? { nextAttemptAt: timestampFromDate(d.nextAttemptAt) } : {}),
    ...(d.deliveredAt ? { deliveredAt: timestampFromDate(d.deliveredAt) } : {}),
    ...(d.lastStatusCode === null ? {} : { lastStatusCode: d.lastStatusCode }),
    lastError: d.lastError ?? '',
    redeliveryCount: d.redeliveryCount,
    attempts: d.attempts.map((a) => ({
      attempt: a.attempt,
      startedAt: timestampFromDate(a.startedAt),
      durationMs: a.durationMs,
      ...(a.statusCode === null ? {} : { statusCode: a.statusCode }),
      error: a.error ?? '',
    })),
  };
}

/** `mcloud.triggers.v1.TriggerDeliveryService` (semantics in trigger_deliveries.proto). */
export function triggerDeliveryServiceHandlers(
  deps: CloudDeps,
): Partial<ServiceImpl<typeof triggerDeliveriesPb.TriggerDeliveryService>> {
  const ctx = fleetContextOf(deps);
  return {
    async listTriggerDeliveries(req, context) {
      const page = await listTriggerDeliveries(ctx, principalOf(context), {
        partId: req.partId,
        triggerName: req.triggerName,
        status: statusFromProto(req.status),
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { deliveries: page.deliveries.map(deliveryToProto), nextPageToken: page.nextPageToken };
    },
    async redeliverTriggerDelivery(req, context) {
      const delivery = await redeliverTriggerDelivery(ctx, principalOf(context), req.id);
      return { delivery: deliveryToProto(delivery) };
    },
  };
}
