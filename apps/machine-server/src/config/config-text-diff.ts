/**
 * The human-readable diff logged with `-reveal-sensitive-config-diffs` (A1.7): both configs pretty-
 * printed as JSON with every secret masked as `******` (cloud secret, API key, location secrets, TLS
 * material, auth handler values, remote credentials), then a line diff showing only changed lines.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.ts';

const mask = '******';
const secretKeys = new Set([
  'secret',
  'location_secret',
  'tls_certificate',
  'tls_private_key',
  'payload',
  'key',
]);

export function maskSecrets(config: JsonObject): JsonObject {
  const walk = (value: JsonValue, pathKeys: string[]): JsonValue => {
    if (Array.isArray(value)) return value.map((entry) => walk(entry, pathKeys));
    if (!isJsonObject(value)) return value;
    const out: JsonObject = {};
    for (const [key, entry] of Object.entries(value)) {
      const inAuthConfig = pathKeys.at(-1) === 'config' && pathKeys.includes('handlers');
      if ((secretKeys.has(key) || inAuthConfig) && entry !== null && typeof entry !== 'object')
        out[key] = mask;
      else if (inAuthConfig && Array.isArray(entry) && key !== 'keys') out[key] = mask;
      else out[key] = walk(entry, [...pathKeys, key]);
    }
    return out;
  };
  return walk(config, []) as JsonObject;
}

/** `- old line` / `+ new line` for the lines that differ (LCS over lines; bounded to 4000 lines). */
export function configTextDiff(left: JsonObject | undefined, right: JsonObject): string {
  const a = left ? JSON.stringify(maskSecrets(left), null, 2).split('\n') : [];
  const b = JSON.stringify(maskSecrets(right), null, 2).split('\n');
  if (a.length * b.length > 16_000_000) return '(config too large to diff)';
  const table: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      const row = table[i] as Uint32Array;
      row[j] =
        a[i] === b[j]
          ? ((table[i + 1] as Uint32Array)[j + 1] as number) + 1
          : Math.max((table[i + 1] as Uint32Array)[j] as number, row[j + 1] as number);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      i++;
      j++;
    } else if (((table[i + 1] as Uint32Array)[j] as number) >= ((table[i] as Uint32Array)[j + 1] as number))
      out.push(`- ${a[i++]}`);
    else out.push(`+ ${b[j++]}`);
  }
  while (i < a.length) out.push(`- ${a[i++]}`);
  while (j < b.length) out.push(`+ ${b[j++]}`);
  return out.join('\n');
}
