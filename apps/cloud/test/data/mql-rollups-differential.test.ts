import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import {
  materializeAllReadingRollups,
  materializeReadingRollups,
} from '../../src/domain/data/rollups/reading-rollup-materializer.ts';
import type { Database } from '../../src/infra/postgres/database.ts';
import { canonicalSet, mingoAggregate } from './mql-support.ts';
import {
  compileReadings,
  createRollupTestContext,
  dropRollupTestContext,
  insertReadings,
  type RollupReading,
  type RollupSource,
  type RollupTestContext,
  readingDocument,
  runAsOrganization,
} from './rollup-support.ts';

/**
 * Differential test of the rollup path: random readings (ints, doubles, strings, nulls, booleans, arrays and
 * objects at the same paths; missing times; requests received an hour later), random eligible
 * `$match`+`$group` pipelines, and the buckets never materialized, fully materialized, partly materialized,
 * or materialized and then made stale by inserts and deletes; raw buckets read per bucket or by one scan. The rollup path must return what the raw
 * compiled SQL returns, and both what mingo returns (the tolerance of mql-support's `canonical`). Another
 * organization's readings share the hours and sources' names: they must never count.
 */

let context: RollupTestContext;
let db: Database;
let org: string;
let other: string;
let sources: RollupSource[];
let otherSources: RollupSource[];
const base = Date.parse('2025-03-10T00:00:00Z');
const hour = 3_600_000;

before(async () => {
  context = await createRollupTestContext();
  ({ db, org, other, sources, otherSources } = context);
});

after(() => dropRollupTestContext(context));

const hundredths = (min: number, max: number) =>
  fc.integer({ min: min * 100, max: max * 100 }).map((n) => n / 100);

const dataArb = fc.record(
  {
    readings: fc.record(
      {
        temperature: fc.oneof(
          fc.integer({ min: -20, max: 40 }),
          hundredths(-20, 40),
          fc.constant(null),
          fc.constantFrom('hot', 'cold'),
        ),
        humidity: fc.integer({ min: 0, max: 100 }),
        level: fc.oneof(hundredths(-5, 5), fc.constantFrom('12', true, null, [3, 4], { v: 2 })),
      },
      { requiredKeys: [] },
    ),
    detections: fc.array(fc.record({ confidence: hundredths(0, 1) }), { maxLength: 3 }),
    pos: fc.oneof(
      hundredths(-9, 9).map((x) => ({ x })),
      hundredths(-9, 9).map((x) => [{ x }]),
      fc.constantFrom('str', null),
    ),
  },
  { requiredKeys: ['readings'] },
);

const readingArb: fc.Arbitrary<RollupReading> = fc
  .record({
    source: fc.integer({ min: 0, max: 3 }),
    minute: fc.integer({ min: 0, max: 48 * 60 }),
    lagSeconds: fc.oneof(fc.constant(2), fc.integer({ min: 0, max: 5400 })),
    times: fc.constantFrom('both', 'both', 'both', 'both', 'no-request', 'no-receipt'),
    data: dataArb,
  })
  .map(({ source, minute, lagSeconds, times, data }) => {
    const at = base + minute * 60_000;
    return {
      source,
      requestedMs: times === 'no-request' ? null : at,
      receivedMs: times === 'no-receipt' ? null : at + lagSeconds * 1000,
      data,
    };
  });

const materializationArb = fc.constantFrom('never', 'full', 'partial', 'stale');

const hourDate = (n: number) => new Date(base + n * hour);
const sourceConditionArb = fc.oneof(
  fc.constantFrom('sensor-1', 'sensor-2', 'motor-1').map((name) => ({ component_name: name })),
  fc
    .subarray(['sensor-1', 'sensor-2', 'motor-1'], { minLength: 1 })
    .map((list) => ({ component_name: { $in: list } })),
  fc.constantFrom('sensor-2', 'motor-1').map((name) => ({ component_name: { $nin: [name] } })),
  fc.constantFrom('Readings', 'Position').map((name) => ({ method_name: name })),
  fc.constantFrom('a', 'c').map((tag) => ({ tags: tag })),
);
const timeConditionArb = fc
  .tuple(
    fc.constantFrom('time_received', 'time_requested'),
    fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }),
    fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }),
  )
  .map(([field, from, to]) => ({
    [field]: {
      ...(from === undefined ? {} : { $gte: hourDate(from) }),
      ...(to !== undefined || from === undefined ? { $lt: hourDate(to ?? 50) } : {}),
    },
  }));
const matchArb = fc
  .array(fc.oneof(sourceConditionArb, timeConditionArb), { maxLength: 3 })
  .map((parts) =>
    parts.length > 1 && parts.length % 2 === 0 ? { $and: parts } : Object.assign({}, ...parts),
  );

const groupKeyArb = fc.constantFrom<unknown>(
  null,
  'all',
  '$component_name',
  '$method_name',
  '$tags',
  { name: '$component_name', method: '$method_name' },
  { $concat: ['$component_name', '/', '$method_name'] },
);

/** Accumulators; `crossType`: $min/$max where arrays meet numbers (mingo's order differs there, see below). */
const accumulatorArb = fc.constantFrom<[string, unknown, boolean]>(
  ['n', { $sum: 1 }, false],
  ['two', { $sum: 2.5 }, false],
  ['cnt', { $count: {} }, false],
  ['total', { $sum: '$data.readings.temperature' }, false],
  ['avg', { $avg: '$data.readings.temperature' }, false],
  ['min', { $min: '$data.readings.temperature' }, false],
  ['max', { $max: '$data.readings.temperature' }, false],
  ['min_humidity', { $min: '$data.readings.humidity' }, false],
  ['max_humidity', { $max: '$data.readings.humidity' }, false],
  ['sum_level', { $sum: '$data.readings.level' }, false],
  ['avg_level', { $avg: '$data.readings.level' }, false],
  ['max_level', { $max: '$data.readings.level' }, true],
  ['min_level', { $min: '$data.readings.level' }, true],
  ['avg_confidence', { $avg: '$data.detections.confidence' }, false],
  ['max_confidence', { $max: '$data.detections.confidence' }, true],
  ['sum_x', { $sum: '$data.pos.x' }, false],
  ['min_x', { $min: '$data.pos.x' }, true],
  ['max_x', { $max: '$data.pos.x' }, true],
);

const pipelineArb = fc
  .tuple(
    fc.option(matchArb, { nil: undefined }),
    groupKeyArb,
    fc.uniqueArray(accumulatorArb, { minLength: 1, maxLength: 5, selector: ([name]) => name }),
  )
  .map(([match, key, accumulators]) => ({
    pipeline: [
      ...(match ? [{ $match: match }] : []),
      { $group: { _id: key, ...Object.fromEntries(accumulators.map(([name, spec]) => [name, spec])) } },
    ],
    // MongoDB and the compiled SQL order an array after numbers; mingo compares them differently.
    mingoComparable: accumulators.every(([, , crossType]) => !crossType),
  }));

const otherReadings: RollupReading[] = Array.from({ length: 40 }, (_, i) => ({
  source: i % 4,
  requestedMs: base + i * 71 * 60_000,
  receivedMs: base + i * 71 * 60_000 + 1000,
  data: { readings: { temperature: 999, humidity: 999, level: 999 }, pos: { x: 999 } },
}));

async function prepare(
  readings: RollupReading[],
  later: RollupReading[],
  deleteEvery: number,
  materialization: string,
  maxBuckets: number,
): Promise<RollupReading[]> {
  await db.query('TRUNCATE readings');
  await insertReadings(db, other, otherSources, otherReadings);
  const ids = await insertReadings(db, org, sources, readings);
  const signal = AbortSignal.timeout(60_000);
  if (materialization === 'full') await materializeAllReadingRollups(db, signal);
  if (materialization === 'partial') await materializeReadingRollups(db, signal, { maxBuckets });
  if (materialization !== 'stale') return readings;
  await materializeAllReadingRollups(db, signal);
  await insertReadings(db, org, sources, later);
  const doomed = ids.filter((_, index) => index % deleteEvery === 0);
  await db.query('DELETE FROM readings WHERE id = ANY($1::bigint[])', [doomed]);
  return [...readings.filter((_, index) => index % deleteEvery !== 0), ...later];
}

test('the rollup path returns what the raw path and mingo return (property-based, 150 pipelines)', async () => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(readingArb, { maxLength: 30 }),
      fc.array(readingArb, { maxLength: 8 }),
      fc.integer({ min: 2, max: 5 }),
      materializationArb,
      fc.integer({ min: 1, max: 6 }),
      pipelineArb,
      fc.constantFrom(0, 1_000),
      async (
        readings,
        later,
        deleteEvery,
        materialization,
        maxBuckets,
        { pipeline, mingoComparable },
        maxProbedBuckets,
      ) => {
        const present = await prepare(readings, later, deleteEvery, materialization, maxBuckets);
        // Raw buckets read one by one, or with one scan of the range.
        const rollupSql = compileReadings(pipeline, true, maxProbedBuckets);
        assert.match(rollupSql, /ru_union/, 'an eligible pipeline takes the rollup path');
        const rollup = canonicalSet(await runAsOrganization(db, org, rollupSql));
        const raw = canonicalSet(await runAsOrganization(db, org, compileReadings(pipeline, false)));
        assert.deepEqual(rollup, raw);
        if (mingoComparable) {
          const documents = present.map((reading, index) => readingDocument(reading, sources, org, index));
          const expected = canonicalSet(mingoAggregate(documents, structuredClone(pipeline)));
          assert.deepEqual(raw, expected);
        }
        runs += 1;
      },
    ),
    { numRuns: 150, seed: Number(process.env.MQL_SEED ?? Date.now() % 2_147_483_647), verbose: 1 },
  );
  assert.equal(runs, 150);
});
