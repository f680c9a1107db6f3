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
  /** How often a replica tries the retention (one replica at a time does it). */
  retentionIntervalMs: number;
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
};
