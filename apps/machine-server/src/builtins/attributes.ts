/** Typed reads of a resource's `attributes` with errors naming `<resource path>.attributes.<key>`. */
import { invalidConfig } from '../errors.ts';
import { isJsonObject, type JsonObject } from '../json.ts';
import type { ResourceConfig } from '../resources/resource-config.ts';

export function numberAttribute(
  config: ResourceConfig,
  key: string,
  limits: { min: number; max: number; fallback: number; integer?: boolean },
): number {
  const value = config.attributes[key];
  if (value === undefined || value === null) return limits.fallback;
  const path = `${config.path}.attributes.${key}`;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw invalidConfig(path, 'must be a number', value);
  if (limits.integer && !Number.isInteger(value)) throw invalidConfig(path, 'must be an integer', value);
  if (value < limits.min || value > limits.max) {
    throw invalidConfig(path, `must be between ${limits.min} and ${limits.max}`, value);
  }
  return value;
}

export function stringAttribute(
  config: ResourceConfig,
  key: string,
  allowed?: readonly string[],
): string | undefined {
  const value = config.attributes[key];
  if (value === undefined || value === null) return undefined;
  const path = `${config.path}.attributes.${key}`;
  if (typeof value !== 'string') throw invalidConfig(path, 'must be a string', value);
  if (allowed && !allowed.includes(value))
    throw invalidConfig(path, `must be one of ${allowed.join(', ')}`, value);
  return value;
}

export function objectAttribute(config: ResourceConfig, key: string): JsonObject | undefined {
  const value = config.attributes[key];
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value))
    throw invalidConfig(`${config.path}.attributes.${key}`, 'must be an object', value);
  return value;
}

/** Rejects attribute keys not in `known` (catches typos such as `widht`). */
export function rejectUnknownAttributes(config: ResourceConfig, known: readonly string[]): void {
  for (const key of Object.keys(config.attributes)) {
    if (!known.includes(key)) {
      throw invalidConfig(
        `${config.path}.attributes.${key}`,
        `is not an attribute of this model (known: ${known.join(', ') || 'none'})`,
      );
    }
  }
}
