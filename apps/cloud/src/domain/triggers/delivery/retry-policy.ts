import type { TriggerDeliverySettings } from './trigger-delivery-settings.ts';

/** What one attempt (webhook request or SMTP transaction) came to. */
export interface AttemptOutcome {
  delivered: boolean;
  /** HTTP status, or the SMTP reply code; undefined when no answer came (network error, timeout). */
  statusCode: number | undefined;
  /** Why it failed (credentials never included). */
  error: string | undefined;
  /** Worth another attempt (network errors, timeouts, 408, 429, 5xx, SMTP 4xx). */
  retryable: boolean;
  /** The receiver's `Retry-After`, in ms from now. */
  retryAfterMs: number | undefined;
}

export type DeliveryDecision =
  | { status: 'delivered' }
  | { status: 'retrying'; delayMs: number }
  | { status: 'failed'; reason: string };

/** HTTP statuses a later attempt may fix: timeouts, rate limits and server errors. 404 and other 4xx are final. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Full-jitter exponential backoff: the n-th retry (n ≥ 1) waits a uniformly random time in
 * [0, min(max, base × 2^(n-1))], at least 1 ms.
 */
export function backoffDelayMs(
  retry: number,
  settings: Pick<TriggerDeliverySettings, 'retryBaseDelayMs' | 'retryMaxDelayMs'>,
  random: () => number,
): number {
  const ceiling = Math.min(
    settings.retryMaxDelayMs,
    settings.retryBaseDelayMs * 2 ** Math.min(retry - 1, 40),
  );
  return Math.max(1, Math.floor(random() * ceiling));
}

/** `Retry-After` as delay-seconds or an HTTP date, in ms from `nowMs` (undefined when absent or invalid). */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | undefined {
  const text = header?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // HTTP dates (IMF-fixdate and the obsolete forms) start with the day name.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const dateMs = Date.parse(text);
  if (!Number.isFinite(dateMs)) return undefined;
  return Math.max(0, dateMs - nowMs);
}

/**
 * After attempt number `roundAttempt` of the current round (1 = first): delivered, retry after a delay
 * (the receiver's `Retry-After` when given, capped; else full-jitter backoff), or failed for good — a final
 * status, or no time left in the retry window that started with the round's first attempt. When the
 * next retry would fall after the window, one last attempt is made at its end.
 */
export function decideNextStep(
  outcome: AttemptOutcome,
  context: { roundAttempt: number; nowMs: number; firstAttemptMs: number },
  settings: TriggerDeliverySettings,
  random: () => number,
): DeliveryDecision {
  if (outcome.delivered) return { status: 'delivered' };
  if (!outcome.retryable) return { status: 'failed', reason: 'not retryable' };
  const wanted =
    outcome.retryAfterMs !== undefined
      ? Math.min(outcome.retryAfterMs, settings.retryAfterMaxMs)
      : backoffDelayMs(context.roundAttempt, settings, random);
  const windowEndMs = context.firstAttemptMs + settings.retryWindowMs;
  const left = windowEndMs - context.nowMs;
  if (left <= 0) {
    const hours = Math.round((settings.retryWindowMs / 3_600_000) * 10) / 10;
    return {
      status: 'failed',
      reason: `gave up after ${context.roundAttempt} attempts over ${hours} h`,
    };
  }
  return { status: 'retrying', delayMs: Math.min(wanted, left) };
}
