import { addJob } from '../../infra/jobs/job-queue.ts';
import type { Queryable } from '../../infra/postgres/database.ts';
import type { PartPlacement } from '../machines/machine-events.ts';
import type { TriggerDataType, TriggerEventType } from './trigger-config.ts';

/**
 * The contract between trigger events and their delivery. An event source (upload, log batch, status
 * change) decides which triggers of the part fire and calls `recordTriggerDelivery` once per trigger and
 * destination INSIDE its transaction; the `trigger-delivery` job then sends it (webhook or email),
 * retries, and records each attempt. Row layout: migration 0012_trigger_deliveries.sql.
 */
export const triggerDeliveryJob = 'trigger-delivery';

/** Payload of a `trigger-delivery` job. */
export interface TriggerDeliveryJobPayload {
  deliveryId: string;
}

/** One synced capture (tabular batch or binary/file upload) as the webhook body describes it. */
export interface IngestedDataFacts {
  componentName: string;
  componentType: string;
  methodName: string;
  dataType: TriggerDataType;
  /** ISO-8601 times the cloud received the earliest and latest piece of data of the upload. */
  minTimeReceived: string;
  maxTimeReceived: string;
  /** The binary/file upload's ID; absent for tabular data. */
  fileId?: string;
  /** For conditional triggers and tabular data: the reading that met the evals (or the last one synced). */
  data?: {
    metadata: { received_at: string; requested_at: string };
    data: Record<string, unknown>;
  };
  /** conditional_data_ingested: the trigger's condition as configured (`{evals: [...]}`). */
  triggerCondition?: unknown;
}

/** One machine log entry as sent in the logs trigger's JSON array. */
export interface TriggerLogEntry {
  time: string;
  level: string;
  loggerName: string;
  message: string;
  caller?: unknown;
  stack?: string;
  fields?: unknown[];
}

/** What happened, by event type. Names (organization, location, machine, part) are resolved at send time. */
export type TriggerEventFacts =
  | { kind: 'part-status'; at: string }
  | { kind: 'data'; data: IngestedDataFacts }
  | { kind: 'logs'; entries: TriggerLogEntry[] };

export interface TriggerDeliveryInput extends PartPlacement {
  triggerName: string;
  eventType: TriggerEventType;
  notificationType: 'webhook' | 'email';
  destination: string;
  signingSecret: string | undefined;
  facts: TriggerEventFacts;
  occurredAt: Date;
}

/**
 * Records a delivery and enqueues its job with the caller's transaction client, so both commit (or roll
 * back) with the event. Rate limiting (`seconds_between_notifications`) is the caller's decision, made
 * before this call (table trigger_rate_limits). Returns the delivery id.
 */
export async function recordTriggerDelivery(tx: Queryable, input: TriggerDeliveryInput): Promise<string> {
  const inserted = await tx.query<{ id: string }>(
    `INSERT INTO trigger_deliveries (organization_id, location_id, robot_id, part_id, trigger_name, event_type,
       notification_type, destination, signing_secret, facts, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id::text`,
    [
      input.organizationId,
      input.locationId,
      input.robotId,
      input.partId,
      input.triggerName,
      input.eventType,
      input.notificationType,
      input.destination,
      input.signingSecret ?? null,
      JSON.stringify(input.facts),
      input.occurredAt,
    ],
  );
  const deliveryId = inserted.rows[0]?.id as string;
  const payload: TriggerDeliveryJobPayload = { deliveryId };
  await addJob(tx, triggerDeliveryJob, payload, { maxAttempts: 1 });
  return deliveryId;
}
