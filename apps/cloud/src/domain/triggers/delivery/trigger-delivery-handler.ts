import { addJob, type JobHandler } from '../../../infra/jobs/job-queue.ts';
import type { Mailer } from '../../../infra/mail/mailer.ts';
import { type Database, type Queryable, withTransaction } from '../../../infra/postgres/database.ts';
import { listOwnerEmails } from '../../fleet/members-repository.ts';
import type { LogEntryInput } from '../../logs/log-entry.ts';
import { appendPartLogs, type LogsContext } from '../../logs/part-logs.ts';
import type { Clock } from '../../shared/clock.ts';
import { isUuid } from '../../validate.ts';
import { allMachineOwners } from '../trigger-config.ts';
import { type TriggerDeliveryJobPayload, triggerDeliveryJob } from '../trigger-delivery.ts';
import { deliveryEmailOf } from './delivery-email.ts';
import { deliveryFailureLogEntry } from './delivery-failure-log.ts';
import {
  type DeliveryRecord,
  lockDeliveryForSending,
  type PlacementNames,
  recordAttempt,
} from './delivery-repository.ts';
import { type AttemptOutcome, decideNextStep } from './retry-policy.ts';
import type { TriggerDeliverySettings } from './trigger-delivery-settings.ts';
import { webhookRequestOf } from './webhook-request.ts';
import { sendWebhook } from './webhook-sender.ts';
import { standardWebhookHeaders } from './webhook-signature.ts';

export interface TriggerDeliveryHandlerDeps {
  db: Database;
  clock: Clock;
  settings: () => TriggerDeliverySettings;
  /** Undefined when no SMTP server is configured: email deliveries then fail with a clear error. */
  mailer: Mailer | undefined;
  /** Where failure lines go (the part's machine logs). */
  logs: LogsContext;
  random?: () => number;
  onError: (message: string, error?: unknown) => void;
}

export const noSmtpError =
  'email delivery needs an SMTP server: start the cloud with --smtp-url (or MCLOUD_SMTP_URL)';

/** graphile-worker runs of a re-enqueued delivery job (a handler that throws, e.g. database trouble). */
const retryJobMaxAttempts = 3;

/**
 * Enqueues the delivery's next job after `delayMs` (database clock). Keyed per delivery, so a delivery has
 * at most one waiting keyed job: a later enqueue replaces it, `preserve_run_at` keeps its time (recovery).
 */
export async function enqueueDelivery(
  tx: Queryable,
  deliveryId: string,
  delayMs: number,
  mode: 'replace' | 'preserve_run_at' = 'replace',
): Promise<void> {
  await addJob(
    tx,
    triggerDeliveryJob,
    { deliveryId },
    {
      runAfterMs: delayMs,
      maxAttempts: retryJobMaxAttempts,
      jobKey: `${triggerDeliveryJob}:${deliveryId}`,
      jobKeyMode: mode,
    },
  );
}

/**
 * The `trigger-delivery` job: one attempt to send one delivery. The row is locked (SKIP LOCKED) for the
 * whole attempt, so a duplicate job never sends twice at once, and a delivered or failed row is never
 * sent again. The attempt, the row's new state and the next job (when retrying, delayed by the backoff)
 * commit together; then a failed attempt writes its error line into the part's machine logs.
 */
export function createTriggerDeliveryHandler(deps: TriggerDeliveryHandlerDeps): JobHandler {
  const random = deps.random ?? Math.random;
  return async (payload, context) => {
    const deliveryId = (payload as Partial<TriggerDeliveryJobPayload> | null)?.deliveryId;
    if (typeof deliveryId !== 'string' || !isUuid(deliveryId)) {
      deps.onError(`trigger-delivery job without a valid deliveryId: ${JSON.stringify(payload)}`);
      return;
    }
    const failure = await withTransaction(deps.db, async (tx) => {
      const locked = await lockDeliveryForSending(tx, deliveryId);
      if (!locked || locked.delivery.status === 'delivered' || locked.delivery.status === 'failed') return;
      const { delivery, names } = locked;
      const settings = deps.settings();
      const startedMs = deps.clock.nowMs();
      const started = performance.now();
      const outcome = await attempt(deps, tx, delivery, names, settings, startedMs, context.signal);
      if (context.signal.aborted) {
        // The queue is stopping: not an attempt. Another replica (or the next start) sends it.
        await enqueueDelivery(tx, deliveryId, 0);
        return;
      }
      const durationMs = Math.round(performance.now() - started);
      const nowMs = deps.clock.nowMs();
      const firstAttemptMs = delivery.firstAttemptAt?.getTime() ?? startedMs;
      const decision = decideNextStep(
        outcome,
        { roundAttempt: delivery.roundAttempts + 1, nowMs, firstAttemptMs },
        settings,
        random,
      );
      const error =
        outcome.error === undefined
          ? undefined
          : withoutCredentials(
              decision.status === 'failed' && outcome.retryable
                ? `${outcome.error}; ${decision.reason}`
                : outcome.error,
              delivery.destination,
            );
      await recordAttempt(tx, delivery, {
        attempt: delivery.attemptCount + 1,
        startedAt: new Date(startedMs),
        durationMs,
        statusCode: outcome.statusCode,
        error,
        status: decision.status,
        firstAttemptAt: new Date(firstAttemptMs),
        nextAttemptAt: decision.status === 'retrying' ? new Date(nowMs + decision.delayMs) : undefined,
        deliveredAt: decision.status === 'delivered' ? new Date(nowMs) : undefined,
      });
      if (decision.status === 'retrying') {
        await enqueueDelivery(tx, deliveryId, decision.delayMs);
      }
      if (decision.status === 'delivered') return;
      const entry: LogEntryInput = deliveryFailureLogEntry(
        delivery,
        {
          error: error ?? 'unknown error',
          statusCode: outcome.statusCode,
          final: decision.status === 'failed',
        },
        new Date(nowMs),
      );
      return { delivery, entry };
    });
    if (!failure) return;
    const { delivery, entry } = failure;
    try {
      await appendPartLogs(
        deps.logs,
        {
          organizationId: delivery.organizationId,
          locationId: delivery.locationId,
          robotId: delivery.robotId,
          partId: delivery.partId,
        },
        [entry],
      );
    } catch (logError) {
      deps.onError(
        `trigger delivery ${delivery.id}: cannot write the failure line to the machine logs`,
        logError,
      );
    }
  };
}

async function attempt(
  deps: TriggerDeliveryHandlerDeps,
  tx: Queryable,
  delivery: DeliveryRecord,
  names: PlacementNames,
  settings: TriggerDeliverySettings,
  nowMs: number,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  try {
    if (delivery.notificationType === 'webhook') {
      const request = webhookRequestOf(delivery, names);
      if (delivery.signingSecret) {
        Object.assign(
          request.headers,
          standardWebhookHeaders(delivery.signingSecret, delivery.id, Math.floor(nowMs / 1000), request.body),
        );
      }
      return await sendWebhook(request, {
        timeoutMs: settings.requestTimeoutMs,
        maxResponseBytes: settings.responseBodyMaxBytes,
        nowMs,
        addressPolicy: settings.webhookAddressPolicy,
        signal,
      });
    }
    if (!deps.mailer) return finalFailure(noSmtpError);
    const recipients =
      delivery.destination === allMachineOwners
        ? await listOwnerEmails(tx, delivery.organizationId)
        : [delivery.destination];
    if (recipients.length === 0) return finalFailure('the organization has no owners with an email address');
    const result = await deps.mailer.send(deliveryEmailOf(delivery, names, recipients), signal);
    return {
      delivered: result.accepted,
      statusCode: result.responseCode,
      error: result.error,
      retryable: result.retryable,
      retryAfterMs: undefined,
    };
  } catch (error) {
    deps.onError(`trigger delivery ${delivery.id} failed unexpectedly`, error);
    return {
      delivered: false,
      statusCode: undefined,
      error: 'internal error while sending',
      retryable: true,
      retryAfterMs: undefined,
    };
  }
}

function finalFailure(error: string): AttemptOutcome {
  return { delivered: false, statusCode: undefined, error, retryable: false, retryAfterMs: undefined };
}

/** Belt and braces: an error text never carries the destination's Basic credentials. */
function withoutCredentials(text: string, destination: string): string {
  let url: URL;
  try {
    url = new URL(destination);
  } catch {
    return text;
  }
  let result = text;
  for (const secret of [url.password, safeDecode(url.password)]) {
    if (secret.length >= 4) result = result.replaceAll(secret, '***');
  }
  return result;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
