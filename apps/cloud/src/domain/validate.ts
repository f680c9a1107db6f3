import { invalidArgument } from './errors.ts';

/** Small input validators shared by every domain module; each names the field and the limit it enforces. */

export function requireNonEmpty(field: string, value: string | undefined): string {
  if (value === undefined || value.trim() === '') throw invalidArgument(field, 'is required');
  return value;
}

export function requireMaxLength(field: string, value: string, max: number): string {
  if (value.length > max) throw invalidArgument(field, `must be at most ${max} characters`, value);
  return value;
}

export function requireName(field: string, value: string | undefined, max = 200): string {
  return requireMaxLength(field, requireNonEmpty(field, value).trim(), max);
}

export function requireNonEmptyList<T>(field: string, values: readonly T[] | undefined): readonly T[] {
  if (!values || values.length === 0) throw invalidArgument(field, 'must contain at least one entry');
  return values;
}

export function requireListMax<T>(field: string, values: readonly T[], max: number): readonly T[] {
  if (values.length > max) throw invalidArgument(field, `must contain at most ${max} entries`, values.length);
  return values;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

export function requireUuid(field: string, value: string | undefined): string {
  const present = requireNonEmpty(field, value);
  if (!isUuid(present)) throw invalidArgument(field, 'must be a UUID', present);
  return present.toLowerCase();
}
