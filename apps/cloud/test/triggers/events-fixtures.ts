import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSdkClient } from '@mcloud/sdk-testkit';
import type { ViamClient } from '@viamrobotics/sdk';
import type { BootstrapFile } from '../../src/bootstrap.ts';
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

/** The real SDK (gRPC) with the bootstrap organization-owner key of a cloud. */
export function ownerSdk(url: string, bootstrap: BootstrapFile): Promise<ViamClient> {
  return createSdkClient({
    url,
    apiKeyId: bootstrap.api_key_id,
    apiKey: bootstrap.api_key,
    transport: 'grpc',
  });
}

/** A trigger with one webhook notification to `<receiverUrl>/<path>`. */
export function webhookTrigger(name: string, event: object, receiverUrl: string, path: string): object {
  return { name, event, notifications: [{ type: 'webhook', value: `${receiverUrl}/${path}` }] };
}

/** Error logs → `<url>/logs`; part online → `<url>/online`. */
export function logsAndOnlineTriggers(receiverUrl: string): object[] {
  return [
    webhookTrigger(
      'errors',
      { type: 'conditional_logs_ingested', log_levels: ['error'] },
      receiverUrl,
      'logs',
    ),
    webhookTrigger('online', { type: 'part_online' }, receiverUrl, 'online'),
  ];
}

export const hook = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'webhook',
  value: `http://127.0.0.1:9/${name}`,
  ...extra,
});

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** performance.now() of this process when the request ended. */
  atMs: number;
}

export interface WebhookReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** Resolves once `count` requests matching `filter` arrived (rejects after `timeoutMs`). */
  waitFor(
    count: number,
    filter?: (r: ReceivedRequest) => boolean,
    timeoutMs?: number,
  ): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real local HTTP server recording every request (answers 200, or `status(path)`). */
export async function startWebhookReceiver(
  status: (path: string) => number = () => 200,
): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      requests.push({
        method: req.method ?? '',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        atMs: performance.now(),
      });
      res.statusCode = status(path);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async waitFor(count, filter = () => true, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = requests.filter(filter);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline)
          throw new Error(
            `expected ${count} webhook requests, got ${matching.length} within ${timeoutMs} ms`,
          );
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
