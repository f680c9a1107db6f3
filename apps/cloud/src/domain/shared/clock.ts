/** Injected time source: schedulers, liveness and caches take a clock so tests move time instead of sleeping. */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };
