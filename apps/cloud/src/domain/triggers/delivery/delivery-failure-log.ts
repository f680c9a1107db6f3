import type { LogEntryInput } from '../../logs/log-entry.ts';
import { redactUrl } from '../trigger-config.ts';
import type { DeliveryRecord } from './delivery-repository.ts';

/** Logger of the failure lines; the events side ignores loggers with this prefix (no feedback loop). */
export const triggerLoggerPrefix = 'app.trigger.';

/**
 * The error-level machine log line of a failed attempt (service spec, "Errors": webhook request fails):
 * logger `app.trigger.<trigger-name>`, naming the target (URL without credentials), part ID, component,
 * method, trigger type, notification type and error text, ending with `ResponseCode: <status>` (0 when no
 * response came).
 */
export function deliveryFailureLogEntry(
  delivery: DeliveryRecord,
  failure: { error: string; statusCode: number | undefined; final: boolean },
  at: Date,
): LogEntryInput {
  const facts = delivery.facts;
  const component = facts.kind === 'data' ? `${facts.data.componentType}/${facts.data.componentName}` : '-';
  const method = facts.kind === 'data' ? facts.data.methodName : '-';
  const target =
    delivery.notificationType === 'webhook' ? redactUrl(delivery.destination) : delivery.destination;
  const outcome = failure.final ? 'giving up' : 'will retry';
  const message =
    `Failed to send ${delivery.notificationType} notification for trigger ${JSON.stringify(delivery.triggerName)} ` +
    `(${outcome}), URL: ${target}, PartID: ${delivery.partId}, Component: ${component}, Method: ${method}, ` +
    `TriggerType: ${delivery.eventType}, NotificationType: ${delivery.notificationType}, ` +
    `Error: ${failure.error}, ResponseCode: ${failure.statusCode ?? 0}`;
  return {
    host: 'cloud',
    level: 'error',
    time: at,
    loggerName: `${triggerLoggerPrefix}${delivery.triggerName}`,
    message,
    caller: undefined,
    stack: '',
    fields: [],
  };
}
