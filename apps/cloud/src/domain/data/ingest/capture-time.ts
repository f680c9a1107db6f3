import { invalidArgument } from '../../errors.ts';
import type { CaptureTimes } from './upload-types.ts';

/** Capture timestamps are microseconds since the Unix epoch; Postgres stores exactly that precision. */

const microsPerMs = 1000n;
const maxFutureMs = 366 * 24 * 3600 * 1000;

let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * `1700000000123456` → `2023-11-14T22:13:20.123456Z`. Hot path of tabular ingest: the
 * `YYYY-MM-DDTHH:MM:SS` prefix of the last second formatted is reused.
 */
export function microsToIso(micros: bigint | number): string {
  const value = Number(micros);
  const second = Math.floor(value / 1_000_000);
  if (second !== cachedSecond) {
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19);
    cachedSecond = second;
  }
  const fraction = value - second * 1_000_000;
  return `${cachedPrefix}.${String(fraction).padStart(6, '0')}Z`;
}

export function microsToMs(micros: bigint): number {
  return Number(micros / microsPerMs);
}

/**
 * The capture instant of a data point: time requested, else time received, else the sync time. Instants
 * before 1970 or more than a year ahead of the cloud's clock are rejected (each month gets a partition).
 */
export function captureInstantUs(times: CaptureTimes, nowMs: number, field: string): bigint {
  const captured = times.timeRequestedUs ?? times.timeReceivedUs ?? BigInt(nowMs) * microsPerMs;
  for (const [name, value] of [
    ['time_requested', times.timeRequestedUs],
    ['time_received', times.timeReceivedUs],
  ] as const) {
    if (value === undefined) continue;
    if (value < 0n)
      throw invalidArgument(
        `${field}.${name}`,
        'must not be before 1970-01-01T00:00:00Z',
        microsToIso(value),
      );
    if (value > BigInt(nowMs + maxFutureMs) * microsPerMs) {
      throw invalidArgument(
        `${field}.${name}`,
        'must not be more than one year in the future',
        microsToIso(value),
      );
    }
  }
  return captured;
}

/**
 * `captureInstantUs` for the tabular hot path, on numbers (microseconds are exact in a double until the
 * year 2255, beyond anything accepted): null means the entry had no such time.
 */
export function captureInstantOfReadingUs(
  requestedUs: number | null,
  receivedUs: number | null,
  nowMs: number,
  field: string,
): number {
  const latestUs = (nowMs + maxFutureMs) * 1000;
  for (const [name, value] of [
    ['time_requested', requestedUs],
    ['time_received', receivedUs],
  ] as const) {
    if (value === null || (value >= 0 && value <= latestUs)) continue;
    throw invalidArgument(
      `${field}.${name}`,
      value < 0 ? 'must not be before 1970-01-01T00:00:00Z' : 'must not be more than one year in the future',
      shownInstant(value),
    );
  }
  return requestedUs ?? receivedUs ?? nowMs * 1000;
}

/** An instant for an error message; beyond what Date can show (±275,760 years), the raw microseconds. */
function shownInstant(micros: number): string {
  return Math.abs(micros) < 8.64e18 ? microsToIso(micros) : `${micros} µs since 1970`;
}
