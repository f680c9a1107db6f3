import type { Clock } from '../../src/clock.ts';

/** A clock tests move by hand. */
export function manualClock(startMs = Date.UTC(2026, 10, 20, 12)) {
  let nowMs = startMs;
  const clock: Clock = { now: () => new Date(nowMs) };
  return {
    clock,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}
