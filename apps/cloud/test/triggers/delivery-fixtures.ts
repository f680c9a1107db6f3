import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CloudConfig } from '../../src/config/cloud-config.ts';
import type { DeliveryRecord } from '../../src/domain/triggers/delivery/delivery-repository.ts';
import { findDelivery } from '../../src/domain/triggers/delivery/delivery-repository.ts';
import {
  recordTriggerDelivery,
  type TriggerDeliveryInput,
} from '../../src/domain/triggers/trigger-delivery.ts';
import { withTransaction } from '../../src/infra/postgres/database.ts';
import type { TestMachine } from '../machines/machine-fixtures.ts';
import type { TestCloud } from '../support/test-cloud.ts';

/** One request as a receiver saw it. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  atMs: number;
}

export type Responder = (request: ReceivedRequest, res: ServerResponse) => void;

/** A real HTTP server that records every request and answers with `respond` (default 200). */
export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  respond: Responder;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    requests: [],
    respond: (_request, res) => res.end('ok'),
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        atMs: Date.now(),
      };
      receiver.requests.push(request);
      receiver.respond(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** Test timing: quick retries, a short request timeout. */
export function fastDelivery(config: CloudConfig): CloudConfig {
  return {
    ...config,
    triggerDelivery: {
      ...config.triggerDelivery,
      requestTimeoutMs: 1_000,
      retryBaseDelayMs: 20,
      retryMaxDelayMs: 100,
    },
  };
}

/** A delivery of `machine`'s part for `recordDelivery`: a part_online webhook at `at` unless overridden. */
export function deliveryInput(
  t: TestCloud,
  machine: TestMachine,
  overrides: Partial<TriggerDeliveryInput> & Pick<TriggerDeliveryInput, 'destination'>,
  at = new Date('2026-11-21T03:00:00.000Z'),
): TriggerDeliveryInput {
  return {
    organizationId: t.bootstrap.organization_id,
    locationId: t.bootstrap.location_id,
    robotId: machine.robotId,
    partId: machine.partId,
    triggerName: 'hook',
    eventType: 'part_online',
    notificationType: 'webhook',
    signingSecret: undefined,
    facts: { kind: 'part-status', at: at.toISOString() },
    occurredAt: at,
    ...overrides,
  };
}

export async function recordDelivery(t: TestCloud, input: TriggerDeliveryInput): Promise<string> {
  return withTransaction(t.cloud.deps.db, (tx) => recordTriggerDelivery(tx, input));
}

export async function waitFor<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 15_000,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until the delivery reaches one of `statuses` (default: delivered or failed). */
export async function waitForDeliveryStatus(
  t: TestCloud,
  id: string,
  statuses: readonly DeliveryRecord['status'][] = ['delivered', 'failed'],
  timeoutMs = 15_000,
): Promise<DeliveryRecord> {
  return waitFor(async () => {
    const delivery = await findDelivery(t.cloud.deps.db, id, [t.bootstrap.organization_id]);
    return delivery && statuses.includes(delivery.status) ? delivery : undefined;
  }, timeoutMs);
}

export async function attemptsOf(t: TestCloud, id: string) {
  const result = await t.cloud.deps.db.query<{
    attempt: number;
    status_code: number | null;
    error: string | null;
    started_at: Date;
  }>(
    'SELECT attempt, status_code, error, started_at FROM trigger_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt',
    [id],
  );
  return result.rows;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
