import { compileLinearRegExp } from './linear-regexp.ts';
import type { EvalOperator, TriggerEval } from './trigger-config.ts';

/**
 * The conditions of a `conditional_data_ingested` trigger, evaluated against one synced reading
 * (docs/triggers.md, "Conditions"). Pure and total: a reading of any shape never makes it throw.
 *
 * - The evals are ANDed: a reading meets the condition when it meets every eval; no evals = always.
 * - The evals address the reading's `readings` object when the payload has one (what a sensor's
 *   `Readings` capture stores), else the payload itself.
 * - An object `value` follows the nesting of the readings: `{coordinate: {latitude: 40}}` compares the
 *   reading's `coordinate.latitude` with 40; several keys in one object must ALL hold.
 * - A scalar `value` at the top level holds when ANY top-level field of the readings satisfies it.
 * - A missing field, or a field of another type than the operator needs, does not satisfy the eval (and
 *   `neq` needs the field to be present): `lt gt lte gte` compare numbers only; `eq neq` compare
 *   numbers, strings, booleans and null strictly; `regex` tests strings (numbers and booleans as text)
 *   of at most 4,096 characters with V8's linear-time engine (linear-regexp.ts).
 */
export function readingMeetsEvals(payload: unknown, evals: readonly TriggerEval[]): boolean {
  if (evals.length === 0) return true;
  const readings = readingsOf(payload);
  for (const item of evals) {
    if (!meetsEval(readings, item)) return false;
  }
  return true;
}

/** The index of the first reading that meets every eval, or -1. */
export function firstReadingMeetingEvals(
  count: number,
  payloadAt: (index: number) => unknown,
  evals: readonly TriggerEval[],
): number {
  for (let index = 0; index < count; index++) {
    if (readingMeetsEvals(payloadAt(index), evals)) return index;
  }
  return -1;
}

/** The object the evals address: `payload.readings` when it is an object, else the payload. */
export function readingsOf(payload: unknown): unknown {
  if (isPlainObject(payload) && isPlainObject(payload.readings)) return payload.readings;
  return payload;
}

function meetsEval(readings: unknown, item: TriggerEval): boolean {
  if (isPlainObject(item.value)) return meetsObject(readings, item.operator, item.value);
  if (isPlainObject(readings)) {
    for (const field of Object.values(readings)) {
      if (compare(field, item.operator, item.value)) return true;
    }
    return false;
  }
  return compare(readings, item.operator, item.value);
}

function meetsObject(target: unknown, operator: EvalOperator, value: Record<string, unknown>): boolean {
  if (!isPlainObject(target)) return false;
  for (const [key, expected] of Object.entries(value)) {
    if (!Object.hasOwn(target, key)) return false;
    const actual = target[key];
    const holds = isPlainObject(expected)
      ? meetsObject(actual, operator, expected)
      : compare(actual, operator, expected);
    if (!holds) return false;
  }
  return true;
}

/** Texts longer than this are not tested against a regex (bounds the cost per reading). */
const regexInputMaxChars = 4_096;
const regexCache = new Map<string, RegExp | null>();
const regexCacheMax = 1_000;

function compiled(pattern: string): RegExp | null {
  let regex = regexCache.get(pattern);
  if (regex === undefined) {
    try {
      regex = compileLinearRegExp(pattern);
    } catch {
      regex = null;
    }
    if (regexCache.size >= regexCacheMax) regexCache.clear();
    regexCache.set(pattern, regex);
  }
  return regex;
}

function compare(actual: unknown, operator: EvalOperator, expected: unknown): boolean {
  if (actual === undefined) return false;
  switch (operator) {
    case 'lt':
    case 'gt':
    case 'lte':
    case 'gte': {
      if (typeof actual !== 'number' || typeof expected !== 'number') return false;
      if (Number.isNaN(actual) || Number.isNaN(expected)) return false;
      if (operator === 'lt') return actual < expected;
      if (operator === 'gt') return actual > expected;
      if (operator === 'lte') return actual <= expected;
      return actual >= expected;
    }
    case 'eq':
      return isScalar(actual) && actual === expected;
    case 'neq':
      return isScalar(actual) && actual !== expected;
    case 'regex': {
      if (typeof expected !== 'string') return false;
      const text =
        typeof actual === 'string'
          ? actual
          : typeof actual === 'number' || typeof actual === 'boolean'
            ? String(actual)
            : undefined;
      if (text === undefined || text.length > regexInputMaxChars) return false;
      return compiled(expected)?.test(text) ?? false;
    }
    default:
      return false;
  }
}

function isScalar(value: unknown): boolean {
  return value === null || ['number', 'string', 'boolean'].includes(typeof value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
