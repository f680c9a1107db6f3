import type { Queryable } from '../../../infra/postgres/database.ts';
import { preparedQuery } from '../../../infra/postgres/prepared-query.ts';
import type { TriggerEventType } from '../trigger-config.ts';
import type { TriggerEventFacts } from '../trigger-delivery.ts';

export const deliveryStatuses = ['pending', 'retrying', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

/** One `trigger_deliveries` row (migrations 0012 and 0014). */
export interface DeliveryRecord {
  id: string;
  organizationId: string;
  locationId: string;
  robotId: string;
  partId: string;
  triggerName: string;
  eventType: TriggerEventType;
  notificationType: 'webhook' | 'email';
  /** May hold Basic credentials (webhook URL): redact before showing. */
  destination: string;
  signingSecret: string | null;
  facts: TriggerEventFacts;
  occurredAt: Date;
  createdAt: Date;
  status: DeliveryStatus;
  attemptCount: number;
  roundAttempts: number;
  firstAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  redeliveryCount: number;
}

/** Names of the delivery's placement, looked up when sending ("" when the resource is gone). */
export interface PlacementNames {
  organizationName: string;
  locationName: string;
  machineName: string;
  partName: string;
}

export interface DeliveryAttemptRecord {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

interface DeliveryRow {
  id: string;
  organization_id: string;
  location_id: string;
  robot_id: string;
  part_id: string;
  trigger_name: string;
  event_type: TriggerEventType;
  notification_type: 'webhook' | 'email';
  destination: string;
  signing_secret: string | null;
  facts: TriggerEventFacts;
  occurred_at: Date;
  created_at: Date;
  status: DeliveryStatus;
  attempt_count: number;
  round_attempts: number;
  first_attempt_at: Date | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  redelivery_count: number;
}

const columns = `d.id::text, d.organization_id::text, d.location_id, d.robot_id::text, d.part_id::text,
  d.trigger_name, d.event_type, d.notification_type, d.destination, d.signing_secret, d.facts, d.occurred_at,
  d.created_at, d.status, d.attempt_count, d.round_attempts, d.first_attempt_at, d.next_attempt_at,
  d.delivered_at, d.last_status_code, d.last_error, d.redelivery_count`;

function fromRow(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    locationId: row.location_id,
    robotId: row.robot_id,
    partId: row.part_id,
    triggerName: row.trigger_name,
    eventType: row.event_type,
    notificationType: row.notification_type,
    destination: row.destination,
    signingSecret: row.signing_secret,
    facts: row.facts,
    occurredAt: row.occurred_at,
    createdAt: row.created_at,
    status: row.status,
    attemptCount: row.attempt_count,
    roundAttempts: row.round_attempts,
    firstAttemptAt: row.first_attempt_at,
    nextAttemptAt: row.next_attempt_at,
    deliveredAt: row.delivered_at,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    redeliveryCount: row.redelivery_count,
  };
}

/**
 * The delivery with its placement names, row-locked for the caller's transaction. Undefined when it does
 * not exist or another worker holds it right now (SKIP LOCKED: a duplicate job must not send twice).
 */
export async function lockDeliveryForSending(
  tx: Queryable,
  id: string,
): Promise<{ delivery: DeliveryRecord; names: PlacementNames } | undefined> {
  const result = await tx.query<
    DeliveryRow & {
      org_name: string;
      location_name: string | null;
      machine_name: string | null;
      part_name: string | null;
    }
  >(
    preparedQuery(
      `SELECT ${columns}, o.name AS org_name, l.name AS location_name, r.name AS machine_name, p.name AS part_name
       FROM trigger_deliveries d
       JOIN organizations o ON o.id = d.organization_id
       LEFT JOIN locations l ON l.id = d.location_id AND l.organization_id = d.organization_id
       LEFT JOIN robots r ON r.id = d.robot_id AND r.organization_id = d.organization_id
       LEFT JOIN robot_parts p ON p.id = d.part_id AND p.organization_id = d.organization_id
      WHERE d.id = $1
        FOR UPDATE OF d SKIP LOCKED`,
      [id],
    ),
  );
  const row = result.rows[0];
  if (!row) return undefined;
  return {
    delivery: fromRow(row),
    names: {
      organizationName: row.org_name,
      locationName: row.location_name ?? '',
      machineName: row.machine_name ?? '',
      partName: row.part_name ?? '',
    },
  };
}

export interface AttemptResult {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | undefined;
  error: string | undefined;
  status: DeliveryStatus;
  firstAttemptAt: Date;
  nextAttemptAt: Date | undefined;
  deliveredAt: Date | undefined;
}

/**
 * Records one attempt and the delivery's new state, in one statement (same transaction as the row lock).
 * Prepared, like the lock: both run once per attempt on the delivery hot path.
 */
export async function recordAttempt(
  tx: Queryable,
  delivery: Pick<DeliveryRecord, 'id' | 'organizationId'>,
  result: AttemptResult,
): Promise<void> {
  await tx.query(
    preparedQuery(
      `WITH attempt AS (
       INSERT INTO trigger_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
       VALUES ($1, $4, $10, $11, $8, $9))
     UPDATE trigger_deliveries
        SET status = $3, attempt_count = $4, round_attempts = round_attempts + 1, first_attempt_at = $5,
            next_attempt_at = $6, delivered_at = $7, last_status_code = $8, last_error = $9
      WHERE id = $1 AND organization_id = $2`,
      [
        delivery.id,
        delivery.organizationId,
        result.status,
        result.attempt,
        result.firstAttemptAt,
        result.nextAttemptAt ?? null,
        result.deliveredAt ?? null,
        result.statusCode ?? null,
        result.error ?? null,
        result.startedAt,
        result.durationMs,
      ],
    ),
  );
}

export interface DeliveryListQuery {
  organizationId: string;
  partId: string;
  triggerName: string | undefined;
  status: DeliveryStatus | undefined;
  /** Only deliveries strictly older than this (created_at in µs since the epoch, id) position. */
  before: { createdAtUs: string; id: string } | undefined;
  limit: number;
}

/** Newest first (created_at, then id, descending), each with its `createdAtUs` for keyset paging. */
export async function listDeliveries(
  db: Queryable,
  query: DeliveryListQuery,
): Promise<Array<DeliveryRecord & { createdAtUs: string }>> {
  const params: unknown[] = [query.organizationId, query.partId];
  const where = ['d.organization_id = $1', 'd.part_id = $2'];
  if (query.triggerName !== undefined) {
    params.push(query.triggerName);
    where.push(`d.trigger_name = $${params.length}`);
  }
  if (query.status !== undefined) {
    params.push(query.status);
    where.push(`d.status = $${params.length}`);
  }
  if (query.before) {
    params.push(query.before.createdAtUs, query.before.id);
    where.push(
      `(d.created_at, d.id) < (timestamptz 'epoch' + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length}::uuid)`,
    );
  }
  params.push(query.limit);
  const result = await db.query<DeliveryRow & { created_at_us: string }>(
    `SELECT ${columns}, (extract(epoch FROM d.created_at) * 1000000)::bigint::text AS created_at_us
       FROM trigger_deliveries d WHERE ${where.join(' AND ')}
      ORDER BY d.created_at DESC, d.id DESC LIMIT $${params.length}`,
    params,
  );
  return result.rows.map((row) => ({ ...fromRow(row), createdAtUs: row.created_at_us }));
}

/** Attempts of the given deliveries of one organization, by delivery id, oldest first. */
export async function listAttempts(
  db: Queryable,
  organizationId: string,
  deliveryIds: readonly string[],
): Promise<Map<string, DeliveryAttemptRecord[]>> {
  const byDelivery = new Map<string, DeliveryAttemptRecord[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return byDelivery;
  const result = await db.query<{
    delivery_id: string;
    attempt: number;
    started_at: Date;
    duration_ms: number;
    status_code: number | null;
    error: string | null;
  }>(
    `SELECT a.delivery_id::text, a.attempt, a.started_at, a.duration_ms, a.status_code, a.error
       FROM trigger_delivery_attempts a JOIN trigger_deliveries d ON d.id = a.delivery_id
      WHERE d.organization_id = $1 AND a.delivery_id = ANY($2::uuid[])
      ORDER BY a.delivery_id, a.attempt`,
    [organizationId, deliveryIds],
  );
  for (const row of result.rows) {
    byDelivery.get(row.delivery_id)?.push({
      attempt: row.attempt,
      startedAt: row.started_at,
      durationMs: row.duration_ms,
      statusCode: row.status_code,
      error: row.error,
    });
  }
  return byDelivery;
}

export async function findDelivery(
  db: Queryable,
  id: string,
  organizationIds: readonly string[],
): Promise<DeliveryRecord | undefined> {
  const result = await db.query<DeliveryRow>(
    `SELECT ${columns} FROM trigger_deliveries d WHERE d.id = $1 AND d.organization_id = ANY($2::uuid[])`,
    [id, organizationIds],
  );
  const row = result.rows[0];
  return row ? fromRow(row) : undefined;
}

/**
 * Starts a new round for a finished (delivered or failed) delivery: pending again, retry window and
 * backoff reset, attempts kept. Undefined when it is not finished (someone else redelivered it first, or
 * it is still being delivered).
 */
export async function resetForRedelivery(
  tx: Queryable,
  delivery: Pick<DeliveryRecord, 'id' | 'organizationId'>,
): Promise<DeliveryRecord | undefined> {
  const result = await tx.query<DeliveryRow>(
    `UPDATE trigger_deliveries d
        SET status = 'pending', round_attempts = 0, first_attempt_at = NULL, next_attempt_at = NULL,
            delivered_at = NULL, redelivery_count = redelivery_count + 1
      WHERE d.id = $1 AND d.organization_id = $2 AND d.status IN ('delivered', 'failed')
      RETURNING ${columns}`,
    [delivery.id, delivery.organizationId],
  );
  const row = result.rows[0];
  return row ? fromRow(row) : undefined;
}

/** Deletes up to `limit` deliveries created before `cutoff` (attempts cascade); returns how many. */
export async function deleteDeliveriesBefore(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM trigger_deliveries WHERE id IN (
       SELECT id FROM trigger_deliveries WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [cutoff, limit],
  );
  return result.rowCount ?? 0;
}

/**
 * Open deliveries (pending or retrying) that should have been attempted before `cutoff` (pending: by
 * creation; retrying: by next attempt), oldest first, row-locked (SKIP LOCKED) for the caller's transaction.
 * Every organization: a maintenance pass, like retention.
 */
export async function lockOverdueDeliveries(tx: Queryable, cutoff: Date, limit: number): Promise<string[]> {
  const result = await tx.query<{ id: string }>(
    `SELECT id::text FROM trigger_deliveries
      WHERE status IN ('pending', 'retrying') AND coalesce(next_attempt_at, created_at) < $1
      ORDER BY coalesce(next_attempt_at, created_at) LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [cutoff, limit],
  );
  return result.rows.map((row) => row.id);
}
