import { defaultWebhookAddressPolicy, type WebhookAddressPolicy } from './webhook-address-policy.ts';

/** Timing and limits of trigger deliveries (CloudConfig.triggerDelivery). */
export interface TriggerDeliverySettings {
  /** One webhook request or SMTP transaction, from connect to the end of the (limited) response. */
  requestTimeoutMs: number;
  /** Response bodies are read up to this many bytes, then the connection is cut. */
  responseBodyMaxBytes: number;
  /** Exponential backoff: the n-th retry waits a random time in [0, min(max, base × 2^(n-1))] (full jitter). */
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  /** A `Retry-After` longer than this is cut to it. */
  retryAfterMaxMs: number;
  /** No attempt later than this after the first attempt of a round (a redelivery starts a new round). */
  retryWindowMs: number;
  /** Deliveries (and their attempts) older than this are deleted. */
  retentionDays: number;
  /** How often a replica tries the retention and the recovery pass (one replica at a time does each). */
  retentionIntervalMs: number;
  /**
   * Recovery: a pending delivery this much older than its creation, or a retrying one this much past its
   * next attempt, has lost its job (a handler that failed on database trouble): it is enqueued again.
   */
  recoverAfterMs: number;
  recoverIntervalMs: number;
  /** Which addresses webhooks may connect to (--webhook-deny-private, --webhook-allow-cidr). */
  webhookAddressPolicy: WebhookAddressPolicy;
}

export const defaultTriggerDeliverySettings: TriggerDeliverySettings = {
  requestTimeoutMs: 10_000,
  responseBodyMaxBytes: 64 * 1024,
  retryBaseDelayMs: 10_000,
  retryMaxDelayMs: 3_600_000,
  retryAfterMaxMs: 6 * 3_600_000,
  retryWindowMs: 24 * 3_600_000,
  retentionDays: 30,
  retentionIntervalMs: 3_600_000,
  recoverAfterMs: 600_000,
  recoverIntervalMs: 300_000,
  webhookAddressPolicy: defaultWebhookAddressPolicy,
};
