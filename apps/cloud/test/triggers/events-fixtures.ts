import type { AuthedClients } from '../support/connect-clients.ts';
import type { TestCloud } from '../support/test-cloud.ts';

/** Helpers of the trigger event suites: configure a part's triggers, read what was recorded. */

export interface RecordedDelivery {
  id: string;
  trigger_name: string;
  event_type: string;
  notification_type: string;
  destination: string;
  signing_secret: string | null;
  facts: Record<string, unknown> & { kind: string };
  occurred_at: Date;
  organization_id: string;
  location_id: string;
  robot_id: string;
  part_id: string;
}

/** Saves the part's configuration with these triggers (through AppService.UpdateRobotPart). */
export async function setTriggers(owner: AuthedClients, partId: string, triggers: unknown[]): Promise<void> {
  const { part } = await owner.app.getRobotPart({ id: partId });
  await owner.app.updateRobotPart({
    id: partId,
    name: part?.name ?? '',
    robotConfig: { components: [], triggers } as never,
  });
}

export async function deliveriesOf(t: TestCloud, partId: string): Promise<RecordedDelivery[]> {
  const rows = await t.cloud.deps.db.query<RecordedDelivery>(
    `SELECT id::text, trigger_name, event_type, notification_type, destination, signing_secret, facts, occurred_at,
            organization_id::text, location_id::text, robot_id::text, part_id::text
       FROM trigger_deliveries WHERE part_id = $1 ORDER BY created_at, trigger_name, destination`,
    [partId],
  );
  return rows.rows;
}

/** Delivery IDs that have a pending `trigger-delivery` job. */
export async function queuedDeliveryIds(t: TestCloud): Promise<Set<string>> {
  const rows = await t.cloud.deps.db.query<{ id: string }>(
    `SELECT j.payload->>'deliveryId' AS id FROM graphile_worker._private_jobs j
       JOIN graphile_worker._private_tasks k ON k.id = j.task_id WHERE k.identifier = 'trigger-delivery'`,
  );
  return new Set(rows.rows.map((row) => row.id));
}

/** Waits until NOTIFY-based invalidation reached the cache: the config change is seen by the next event. */
export async function settle(ms = 150): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

export const hook = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'webhook',
  value: `http://127.0.0.1:9/${name}`,
  ...extra,
});
