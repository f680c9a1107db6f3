import type { Queryable } from '../../infra/postgres/database.ts';

export interface RateLimitKey {
  organizationId: string;
  partId: string;
  triggerName: string;
  notificationType: 'webhook' | 'email';
  destination: string;
}

/**
 * `seconds_between_notifications`: claims the right to record a notification for this part, trigger,
 * notification type and destination at `now`, inside the event's transaction. One conditional upsert:
 * the row is inserted, or moved to `now` only if its last recording is at least `seconds` old. A
 * concurrent transaction claiming the same key waits for this one's row lock and then re-checks the
 * condition against the committed row, so two replicas cannot both pass the limit; if this transaction
 * rolls back, its claim disappears with it. `seconds` ≤ 0 never limits (and writes nothing).
 */
export async function claimNotificationSlot(
  tx: Queryable,
  key: RateLimitKey,
  now: Date,
  seconds: number,
): Promise<boolean> {
  if (!(seconds > 0)) return true;
  const claimed = await tx.query(
    `INSERT INTO trigger_rate_limits AS l
       (organization_id, part_id, trigger_name, notification_type, destination, last_recorded_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (part_id, trigger_name, notification_type, destination)
     DO UPDATE SET last_recorded_at = EXCLUDED.last_recorded_at
       WHERE l.organization_id = EXCLUDED.organization_id
         AND l.last_recorded_at <= EXCLUDED.last_recorded_at - make_interval(secs => $7)
     RETURNING 1`,
    [key.organizationId, key.partId, key.triggerName, key.notificationType, key.destination, now, seconds],
  );
  return (claimed.rowCount ?? 0) > 0;
}

/**
 * Deletes up to `limit` rate-limit rows last recorded before `cutoff` (every organization: a maintenance
 * pass). With `cutoff` at least `maxSecondsBetweenNotifications` in the past, a deleted row could not have
 * limited any event any more. Returns how many were deleted.
 */
export async function deleteRateLimitsBefore(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM trigger_rate_limits WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM trigger_rate_limits WHERE last_recorded_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [cutoff, limit],
  );
  return result.rowCount ?? 0;
}
