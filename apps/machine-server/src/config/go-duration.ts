/** Go duration strings (`10s`, `1m30s`, `500ms`, `1.5h`) as used by `cloud.refresh_interval` and friends. */
import { invalidConfig } from '../errors.ts';

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

export function parseGoDurationMs(text: unknown, path: string): number {
  if (typeof text !== 'string' || text === '')
    throw invalidConfig(path, 'must be a duration like "15s" or "1m30s"', text);
  if (text === '0') return 0;
  let total = 0;
  part.lastIndex = 0;
  while (part.lastIndex < text.length) {
    const start = part.lastIndex;
    const match = part.exec(text);
    if (!match || match.index !== start)
      throw invalidConfig(path, 'must be a duration like "15s" or "1m30s"', text);
    total += Number(match[1]) * (unitMs[match[2] as string] as number);
  }
  return total;
}
