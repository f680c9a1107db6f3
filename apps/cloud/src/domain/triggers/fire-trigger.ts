import type { Queryable } from '../../infra/postgres/database.ts';
import type { PartPlacement } from '../machines/machine-events.ts';
import type { TriggerConfig } from './trigger-config.ts';
import { recordTriggerDelivery, type TriggerEventFacts } from './trigger-delivery.ts';
import { claimNotificationSlot } from './trigger-rate-limit.ts';

/**
 * A trigger fired: inside the event's transaction, one delivery per notification whose
 * `seconds_between_notifications` allows it at `now` (the injected clock). Returns the delivery IDs.
 */
export async function fireTrigger(
  tx: Queryable,
  part: PartPlacement,
  trigger: TriggerConfig,
  facts: TriggerEventFacts,
  occurredAt: Date,
  now: Date,
): Promise<string[]> {
  const ids: string[] = [];
  for (const notification of trigger.notifications) {
    const allowed = await claimNotificationSlot(
      tx,
      {
        organizationId: part.organizationId,
        partId: part.partId,
        triggerName: trigger.name,
        notificationType: notification.type,
        destination: notification.value,
      },
      now,
      notification.secondsBetweenNotifications,
    );
    if (!allowed) continue;
    ids.push(
      await recordTriggerDelivery(tx, {
        organizationId: part.organizationId,
        locationId: part.locationId,
        robotId: part.robotId,
        partId: part.partId,
        triggerName: trigger.name,
        eventType: trigger.eventType,
        notificationType: notification.type,
        destination: notification.value,
        signingSecret: notification.signingSecret,
        facts,
        occurredAt,
      }),
    );
  }
  return ids;
}
