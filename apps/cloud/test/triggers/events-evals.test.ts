import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { linearRegExpEngine } from '../../src/domain/triggers/linear-regexp.ts';
import {
  type EvalOperator,
  parseTriggers,
  type TriggerEval,
} from '../../src/domain/triggers/trigger-config.ts';
import {
  firstReadingMeetingEvals,
  readingMeetsEvals,
  readingsOf,
} from '../../src/domain/triggers/trigger-evals.ts';

const e = (operator: EvalOperator, value: unknown): TriggerEval => ({ operator, value });
const r = (readings: unknown) => ({ readings });

test('no evals: every reading meets the condition (fires on every sync)', () => {
  assert.equal(readingMeetsEvals(r({ cpu: 1 }), []), true);
  assert.equal(readingMeetsEvals(null, []), true);
  assert.equal(readingMeetsEvals('anything', []), true);
});

test('numeric operators compare numbers, at the boundary and on both sides', () => {
  const cases: [EvalOperator, number, boolean, boolean, boolean][] = [
    // operator, threshold, below, equal, above
    ['lt', 50, true, false, false],
    ['lte', 50, true, true, false],
    ['gt', 50, false, false, true],
    ['gte', 50, false, true, true],
    ['eq', 50, false, true, false],
    ['neq', 50, true, false, true],
  ];
  for (const [operator, threshold, below, equal, above] of cases) {
    const evals = [e(operator, { cpu: threshold })];
    assert.equal(readingMeetsEvals(r({ cpu: 49.5 }), evals), below, `${operator} below`);
    assert.equal(readingMeetsEvals(r({ cpu: 50 }), evals), equal, `${operator} equal`);
    assert.equal(readingMeetsEvals(r({ cpu: 50.5 }), evals), above, `${operator} above`);
  }
  assert.equal(readingMeetsEvals(r({ t: -3 }), [e('lt', { t: 0 })]), true);
});

test('the spec examples: gt {cpu} and lt {coordinate: {latitude}} (nested)', () => {
  assert.equal(readingMeetsEvals(r({ cpu: 80 }), [e('gt', { cpu: 50 })]), true);
  assert.equal(readingMeetsEvals(r({ cpu: 20 }), [e('gt', { cpu: 50 })]), false);
  const nested = [e('lt', { coordinate: { latitude: 40 } })];
  assert.equal(readingMeetsEvals(r({ coordinate: { latitude: 39.9, longitude: -70 } }), nested), true);
  assert.equal(readingMeetsEvals(r({ coordinate: { latitude: 40.1 } }), nested), false);
  assert.equal(readingMeetsEvals(r({ coordinate: 12 }), nested), false, 'not an object where one is named');
  const deep = [e('eq', { a: { b: { c: { d: 'x' } } } })];
  assert.equal(readingMeetsEvals(r({ a: { b: { c: { d: 'x' } } } }), deep), true);
  assert.equal(readingMeetsEvals(r({ a: { b: { c: { d: 'y' } } } }), deep), false);
});

test('several evals are ANDed; several keys in one object are ANDed', () => {
  const evals = [e('gt', { cpu: 50 }), e('lt', { temp: 30 })];
  assert.equal(readingMeetsEvals(r({ cpu: 60, temp: 20 }), evals), true);
  assert.equal(readingMeetsEvals(r({ cpu: 60, temp: 40 }), evals), false);
  assert.equal(readingMeetsEvals(r({ cpu: 40, temp: 20 }), evals), false);
  const keys = [e('gt', { cpu: 50, mem: 50 })];
  assert.equal(readingMeetsEvals(r({ cpu: 60, mem: 60 }), keys), true);
  assert.equal(readingMeetsEvals(r({ cpu: 60, mem: 40 }), keys), false);
  assert.equal(readingMeetsEvals(r({ cpu: 60 }), keys), false, 'a missing key fails');
});

test('eq / neq compare strings, booleans and null strictly; neq needs the field', () => {
  assert.equal(readingMeetsEvals(r({ status: 'ok' }), [e('eq', { status: 'ok' })]), true);
  assert.equal(readingMeetsEvals(r({ status: 'OK' }), [e('eq', { status: 'ok' })]), false);
  assert.equal(readingMeetsEvals(r({ on: true }), [e('eq', { on: true })]), true);
  assert.equal(readingMeetsEvals(r({ on: 'true' }), [e('eq', { on: true })]), false);
  assert.equal(readingMeetsEvals(r({ v: null }), [e('eq', { v: null })]), true);
  assert.equal(readingMeetsEvals(r({ v: 5 }), [e('eq', { v: '5' })]), false);
  assert.equal(readingMeetsEvals(r({ v: 5 }), [e('neq', { v: '5' })]), true);
  assert.equal(readingMeetsEvals(r({ other: 1 }), [e('neq', { v: 1 })]), false);
  assert.equal(readingMeetsEvals(r({ v: { x: 1 } }), [e('neq', { v: 1 })]), false, 'object is no scalar');
  assert.equal(readingMeetsEvals(r({ v: [1] }), [e('eq', { v: 1 })]), false);
});

test('regex tests strings (and numbers/booleans as text)', () => {
  const evals = [e('regex', { status: '^err(or)?$' })];
  assert.equal(readingMeetsEvals(r({ status: 'error' }), evals), true);
  assert.equal(readingMeetsEvals(r({ status: 'err' }), evals), true);
  assert.equal(readingMeetsEvals(r({ status: 'no error' }), evals), false);
  assert.equal(readingMeetsEvals(r({ code: 404 }), [e('regex', { code: '^4\\d\\d$' })]), true);
  assert.equal(readingMeetsEvals(r({ on: true }), [e('regex', { on: 'tru' })]), true);
  assert.equal(readingMeetsEvals(r({ status: null }), evals), false);
  assert.equal(readingMeetsEvals(r({ status: ['error'] }), evals), false);
  assert.equal(readingMeetsEvals(r({ status: 'x'.repeat(20_000) }), [e('regex', { status: 'x' })]), false);
  assert.equal(readingMeetsEvals(r({ s: 'a' }), [e('regex', { s: '(' })]), false, 'invalid pattern');
});

test('regex runs in linear time: a catastrophic pattern cannot stall ingest; backreferences are refused', () => {
  assert.equal(linearRegExpEngine, true, "V8's linear-time engine is enabled on this Node");
  const started = performance.now();
  const evil = [e('regex', { s: '^(a+)+$' }), e('regex', { s: '(x+x+)+y' })];
  assert.equal(readingMeetsEvals(r({ s: `${'a'.repeat(4_000)}b` }), evil.slice(0, 1)), false);
  assert.equal(readingMeetsEvals(r({ s: 'x'.repeat(4_000) }), evil.slice(1)), false);
  assert.equal(readingMeetsEvals(r({ s: 'aaaa' }), evil.slice(0, 1)), true);
  const elapsedMs = performance.now() - started;
  assert.ok(elapsedMs < 1_000, `took ${elapsedMs} ms (backtracking engine: years)`);
  const save = (value: unknown) =>
    parseTriggers('config.triggers', [
      {
        name: 'r',
        event: {
          type: 'conditional_data_ingested',
          conditional: {
            data_capture_method: 'sensor:s:Readings',
            conditions: { evals: [{ operator: 'regex', value }] },
          },
        },
        notifications: [{ type: 'webhook', value: 'https://x.test/' }],
      },
    ]);
  assert.throws(
    () => save({ s: '(a)\\1' }),
    /config\.triggers\[0\]\.event\.conditional\.conditions\.evals\[0\]\.value\.s: must be a regular expression that runs in linear time/,
  );
  assert.throws(() => save({ s: 'a'.repeat(1_001) }), /value\.s: must be at most 1000 characters/);
  save({ s: '^(a+)+$' });
});

test('type mismatches never throw and never hold', () => {
  const odd = [
    null,
    undefined,
    42,
    'text',
    [],
    [1, 2],
    { readings: null },
    { readings: [1] },
    { readings: { cpu: '90' } },
    { readings: { cpu: null } },
    { readings: { cpu: { nested: 1 } } },
    { readings: { cpu: Number.NaN } },
  ];
  for (const payload of odd) {
    assert.equal(readingMeetsEvals(payload, [e('gt', { cpu: 50 })]), false, JSON.stringify(payload));
  }
  assert.equal(readingMeetsEvals(r({ cpu: 90 }), [e('gt', { cpu: 'x' })]), false);
});

test('a scalar value at the top level holds when any top-level field satisfies it', () => {
  assert.equal(readingMeetsEvals(r({ a: 1, b: 70 }), [e('gt', 50)]), true);
  assert.equal(readingMeetsEvals(r({ a: 1, b: 7 }), [e('gt', 50)]), false);
  assert.equal(readingMeetsEvals(5, [e('lt', 10)]), true);
});

test('the evals address payload.readings when present, else the payload itself', () => {
  assert.deepEqual(readingsOf({ readings: { a: 1 } }), { a: 1 });
  assert.deepEqual(readingsOf({ a: 1 }), { a: 1 });
  assert.equal(readingMeetsEvals({ cpu: 90 }, [e('gt', { cpu: 50 })]), true);
});

test('firstReadingMeetingEvals finds the first reading that meets every eval', () => {
  const payloads = [r({ cpu: 10 }), r({ cpu: 60, t: 99 }), r({ cpu: 70, t: 1 }), r({ cpu: 80, t: 2 })];
  const evals = [e('gt', { cpu: 50 }), e('lt', { t: 10 })];
  assert.equal(
    firstReadingMeetingEvals(payloads.length, (i) => payloads[i], evals),
    2,
  );
  assert.equal(
    firstReadingMeetingEvals(payloads.length, (i) => payloads[i], [e('gt', { cpu: 99 })]),
    -1,
  );
  assert.equal(
    firstReadingMeetingEvals(payloads.length, (i) => payloads[i], []),
    0,
  );
});

test('property: arbitrary JSON readings against arbitrary valid evals never throw', () => {
  const operators: EvalOperator[] = ['lt', 'gt', 'lte', 'gte', 'eq', 'neq', 'regex'];
  const leafFor = (operator: EvalOperator) =>
    operator === 'regex'
      ? fc.constantFrom('^a', 'b+', '\\d', '.*', '(x|y)')
      : ['lt', 'gt', 'lte', 'gte'].includes(operator)
        ? fc.double({ noNaN: true, noDefaultInfinity: true })
        : fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null));
  const evalArb = fc
    .constantFrom(...operators)
    .chain((operator) =>
      fc
        .oneof(
          leafFor(operator),
          fc.dictionary(fc.constantFrom('a', 'b', 'c'), leafFor(operator), { minKeys: 1 }),
          fc.record({ a: fc.dictionary(fc.constantFrom('b', 'c'), leafFor(operator), { minKeys: 1 }) }),
        )
        .map((value) => e(operator, value)),
    );
  fc.assert(
    fc.property(fc.jsonValue(), fc.array(evalArb, { maxLength: 4 }), (payload, evals) => {
      // Every eval generated here passes the configuration validator.
      parseTriggers('t', [
        {
          name: 'x',
          event: {
            type: 'conditional_data_ingested',
            conditional: { data_capture_method: 'sensor:s:Readings', conditions: { evals } },
          },
          notifications: [{ type: 'webhook', value: 'http://x.test/' }],
        },
      ]);
      const result = readingMeetsEvals(payload, evals);
      assert.equal(typeof result, 'boolean');
      if (
        payload !== null &&
        typeof payload === 'object' &&
        !Array.isArray(payload) &&
        !('readings' in payload)
      )
        assert.equal(
          readingMeetsEvals({ readings: payload }, evals),
          result,
          'wrapped in readings: same answer',
        );
    }),
    { numRuns: 500 },
  );
});
