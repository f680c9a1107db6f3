import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { Database } from '../../src/infra/postgres/database.ts';
import { createMigratedDatabase, type MigratedDatabase } from '../support/test-database.ts';
import {
  canonical,
  canonicalSet,
  loadDocuments,
  mingoAggregate,
  runCompiled,
  type TestDocument,
} from './mql-support.ts';

/**
 * Differential test: random pipelines over random readings, compiled to SQL and run on the real
 * PostgreSQL, must return what mingo (the reference engine) returns for the same documents. Results
 * are compared in order when the pipeline ends with a total order ($sort with _id as the last key,
 * optionally followed by $skip/$limit), otherwise as sets.
 */

let database: MigratedDatabase;
let db: Database;

before(async () => {
  database = await createMigratedDatabase(4);
  db = database.db;
});

after(() => database.close());

const base = Date.parse('2025-03-10T00:00:00Z');
const names = ['sensor-1', 'sensor-2', 'motor-1', 'cam'];
const methods = ['Readings', 'Position', 'ReadImage'];
const tagPool = ['a', 'b', 'c'];
const classes = ['cat', 'dog', 'car'];

const hundredths = (min: number, max: number) =>
  fc.integer({ min: min * 100, max: max * 100 }).map((n) => n / 100);

const readingsArb = fc.record(
  {
    temperature: fc.oneof(
      fc.integer({ min: -20, max: 40 }),
      hundredths(-20, 40),
      fc.constant(null),
      fc.constantFrom('hot', 'cold', 'warm'),
    ),
    humidity: fc.integer({ min: 0, max: 100 }),
    ok: fc.boolean(),
    // Every type a number accumulator must skip: numeric strings are not numbers, nor are arrays of them.
    level: fc.oneof(
      hundredths(-5, 5),
      fc.constantFrom('12', true, null, [3, 4], { v: 2 }),
      // Arrays against numbers and each other ($min/$max compare whole values): by element, prefix first.
      fc.constantFrom(
        [],
        [10],
        [9, 1],
        [3],
        [3, 4, -1],
        [-0.5],
        ['a'],
        [null],
        [[2]],
        [3, 'a'],
        [true],
        [2.25, 100],
      ),
    ),
  },
  { requiredKeys: [] },
);

const documentArb = fc.record({
  component_name: fc.constantFrom(...names),
  method_name: fc.constantFrom(...methods),
  minutes: fc.integer({ min: 0, max: 60 * 24 * 3 }),
  tags: fc.subarray(tagPool),
  readings: readingsArb,
  detections: fc.option(
    fc.array(fc.record({ class_name: fc.constantFrom(...classes), confidence: hundredths(0, 1) }), {
      maxLength: 3,
    }),
    { nil: undefined },
  ),
});

const documentsArb = fc.array(documentArb, { maxLength: 25 }).map((items) =>
  items.map(
    (item, index): TestDocument => ({
      _id: `r${String(index).padStart(3, '0')}`,
      component_name: item.component_name,
      method_name: item.method_name,
      time_received: new Date(base + item.minutes * 60_000),
      tags: item.tags,
      data: {
        readings: item.readings,
        ...(item.detections === undefined ? {} : { detections: item.detections }),
      },
    }),
  ),
);

const comparisonOp = fc.constantFrom('$gt', '$gte', '$lt', '$lte');
const matchConditionArb: fc.Arbitrary<object> = fc.oneof(
  fc.constantFrom(...names).map((name) => ({ component_name: name })),
  fc.subarray(names, { minLength: 1 }).map((list) => ({ component_name: { $in: list } })),
  fc.subarray(names, { minLength: 1 }).map((list) => ({ component_name: { $nin: list } })),
  fc
    .tuple(comparisonOp, fc.integer({ min: -20, max: 40 }))
    .map(([op, n]) => ({ 'data.readings.temperature': { [op]: n } })),
  fc
    .tuple(comparisonOp, fc.constantFrom('cold', 'hot', 'd'))
    .map(([op, s]) => ({ 'data.readings.temperature': { [op]: s } })),
  fc.constant({ 'data.readings.temperature': null }),
  fc.integer({ min: -20, max: 40 }).map((n) => ({ 'data.readings.temperature': { $ne: n } })),
  // $not: also true where the field is missing or of another type.
  fc
    .tuple(comparisonOp, fc.integer({ min: -20, max: 40 }))
    .map(([op, n]) => ({ 'data.readings.temperature': { $not: { [op]: n } } })),
  fc.subarray(tagPool, { minLength: 1 }).map((list) => ({ tags: { $not: { $in: list } } })),
  fc.integer({ min: 2, max: 5 }).map((n) => ({ 'data.readings.humidity': { $mod: [n, 1] } })),
  fc.constantFrom('hot', 'cold').map((s) => ({ 'data.readings.temperature': s })),
  fc
    .constantFrom('string', 'number', 'null')
    .map((type) => ({ 'data.readings.temperature': { $type: type } })),
  fc.boolean().map((wanted) => ({ 'data.readings.humidity': { $exists: wanted } })),
  fc.boolean().map((ok) => ({ 'data.readings.ok': ok })),
  fc.constantFrom(...tagPool).map((tag) => ({ tags: tag })),
  fc.subarray(tagPool, { minLength: 1 }).map((list) => ({ tags: { $all: list } })),
  fc.integer({ min: 0, max: 3 }).map((n) => ({ tags: { $size: n } })),
  hundredths(0, 1).map((x) => ({ 'data.detections.confidence': { $gt: x } })),
  fc.constantFrom(...classes).map((name) => ({ 'data.detections.class_name': name })),
  fc.tuple(fc.constantFrom(...classes), hundredths(0, 1)).map(([name, x]) => ({
    'data.detections': { $elemMatch: { class_name: name, confidence: { $gte: x } } },
  })),
  fc.boolean().map((wanted) => ({ 'data.detections': { $exists: wanted } })),
  fc
    .integer({ min: 0, max: 60 * 24 * 3 })
    .map((m) => ({ time_received: { $gte: new Date(base + m * 60_000) } })),
  fc
    .integer({ min: 0, max: 60 * 24 * 3 })
    .map((m) => ({ time_received: { $lt: new Date(base + m * 60_000) } })),
  fc
    .constantFrom('^Re', '^re', 'ion$', 'a.e')
    .map((pattern) => ({ method_name: { $regex: pattern, $options: 'i' } })),
  fc.constantFrom('^Re', 'ion$').map((pattern) => ({ method_name: { $regex: pattern } })),
  fc.constant({ $expr: { $gt: ['$data.readings.temperature', '$data.readings.humidity'] } }),
  fc.constant({ $expr: { $eq: ['$data.readings.temperature', null] } }),
);

const matchArb = fc.oneof(
  { weight: 3, arbitrary: matchConditionArb },
  {
    weight: 1,
    arbitrary: fc.array(matchConditionArb, { minLength: 2, maxLength: 3 }).map((list) => ({ $or: list })),
  },
  {
    weight: 1,
    arbitrary: fc.array(matchConditionArb, { minLength: 2, maxLength: 3 }).map((list) => ({ $and: list })),
  },
  {
    weight: 1,
    arbitrary: fc.array(matchConditionArb, { minLength: 1, maxLength: 2 }).map((list) => ({ $nor: list })),
  },
);

const computedArb: fc.Arbitrary<[string, unknown]> = fc.constantFrom<[string, unknown]>(
  ['double_humidity', { $multiply: [{ $ifNull: ['$data.readings.humidity', 0] }, 2] }],
  ['plus', { $add: ['$data.readings.humidity', 10, 0.5] }],
  ['minus', { $subtract: ['$data.readings.humidity', 10] }],
  ['ratio', { $divide: [{ $ifNull: ['$data.readings.humidity', 1] }, 4] }],
  ['day', { $dateToString: { format: '%Y-%m-%d %H:00', date: '$time_received' } }],
  ['iso', { $dateToString: { date: '$time_received' } }],
  ['hour', { $hour: '$time_received' }],
  ['weekday', { $dayOfWeek: '$time_received' }],
  ['month', { $month: '$time_received' }],
  ['truncated', { $dateTrunc: { date: '$time_received', unit: 'hour' } }],
  ['label', { $concat: ['$component_name', '/', '$method_name'] }],
  ['upper', { $toUpper: '$component_name' }],
  ['hot', { $cond: [{ $gte: ['$data.readings.temperature', 20] }, 'hot', 'cold'] }],
  // biome-ignore lint/suspicious/noThenProperty: $cond's documented argument names
  ['hot2', { $cond: { if: { $lt: ['$data.readings.temperature', 0] }, then: 1, else: 0 } }],
  ['humidity_or', { $ifNull: ['$data.readings.humidity', -1] }],
  ['tag_count', { $size: '$tags' }],
  ['first_tag', { $arrayElemAt: ['$tags', 0] }],
  ['text', { $toString: '$data.readings.humidity' }],
  ['has_a', { $in: ['a', '$tags'] }],
  ['both', { $and: ['$data.readings.ok', { $gt: ['$data.readings.humidity', 50] }] }],
  ['temp', '$data.readings.temperature'],
  ['classes', '$data.detections.class_name'],
  ['constant', { $literal: '$not-a-path' }],
  ['kind', { $type: '$data.readings.temperature' }],
  ['cmp', { $cmp: ['$data.readings.temperature', 10] }],
  ['abs', { $abs: { $subtract: [50, { $ifNull: ['$data.readings.humidity', 0] }] } }],
  ['rem', { $mod: [{ $ifNull: ['$data.readings.humidity', 0] }, 7] }],
  ['day_start', { $dateTrunc: { date: '$time_received', unit: 'day' } }],
);

// $set is $addFields under another name.
const addFieldsArb = fc
  .tuple(
    fc.uniqueArray(computedArb, { minLength: 1, maxLength: 3, selector: ([name]) => name }),
    fc.constantFrom('$addFields', '$set'),
  )
  .map(([entries, stage]) => ({ [stage]: Object.fromEntries(entries) }));

const groupKeyArb = fc.constantFrom<unknown>(
  '$component_name',
  null,
  '$method_name',
  { $dateToString: { format: '%Y-%m-%d', date: '$time_received' } },
  '$data.readings.ok',
  '$data.readings.temperature',
  { name: '$component_name', method: '$method_name' },
);

const accumulatorArb: fc.Arbitrary<[string, unknown]> = fc.constantFrom<[string, unknown]>(
  ['n', { $sum: 1 }],
  ['total', { $sum: '$data.readings.temperature' }],
  ['humidity_total', { $sum: '$data.readings.humidity' }],
  ['avg', { $avg: '$data.readings.temperature' }],
  ['avg_humidity', { $avg: '$data.readings.humidity' }],
  ['min', { $min: '$data.readings.temperature' }],
  ['max', { $max: '$data.readings.temperature' }],
  ['latest', { $max: '$time_received' }],
  // One computed (hoisted) argument shared by two accumulators.
  ['max_or_zero', { $max: { $ifNull: ['$data.readings.temperature', 0] } }],
  ['avg_or_zero', { $avg: { $ifNull: ['$data.readings.temperature', 0] } }],
  ['max_name', { $max: '$component_name' }],
  ['avg_level', { $avg: '$data.readings.level' }],
  ['sum_level', { $sum: '$data.readings.level' }],
  // Numbers, strings, a document, booleans and arrays in one group: whole values in BSON order.
  ['min_level', { $min: '$data.readings.level' }],
  ['max_level', { $max: '$data.readings.level' }],
  ['max_level_or_tags', { $max: { $ifNull: ['$data.readings.level', '$tags'] } }],
  // A path through an array: an array of values, which number accumulators skip.
  ['avg_confidence', { $avg: '$data.detections.confidence' }],
  ['sum_confidence', { $sum: '$data.detections.confidence' }],
  ['cnt', { $count: {} }],
  ['set_names', { $addToSet: '$component_name' }],
  // Like $push: MongoDB skips missing values, mingo adds null.
  ['set_temps', { $addToSet: { $ifNull: ['$data.readings.temperature', 'none'] } }],
);

const orderedAccumulatorArb: fc.Arbitrary<[string, unknown]> = fc.constantFrom<[string, unknown]>(
  ['first_id', { $first: '$_id' }],
  ['last_id', { $last: '$_id' }],
  ['first_temp', { $first: '$data.readings.temperature' }],
  ['ids', { $push: '$_id' }],
  // MongoDB's $push skips missing values, mingo pushes null: only present values are pushed here.
  ['humidities', { $push: { $ifNull: ['$data.readings.humidity', -1] } }],
);

const groupArb = fc
  .tuple(
    groupKeyArb,
    fc.uniqueArray(accumulatorArb, { minLength: 1, maxLength: 4, selector: ([name]) => name }),
    fc.uniqueArray(orderedAccumulatorArb, { maxLength: 2, selector: ([name]) => name }),
    fc.boolean(),
  )
  .map(([key, plain, ordered, sortAfter]) => {
    const stages: object[] = [];
    if (ordered.length) stages.push({ $sort: { _id: 1 } });
    stages.push({ $group: { _id: key, ...Object.fromEntries([...plain, ...ordered]) } });
    // Documents as keys: MongoDB orders them field by field, mingo by sorted field names; not compared.
    if (sortAfter && (key === null || typeof key !== 'object')) stages.push({ $sort: { _id: 1 } });
    return stages;
  });

const shapeArb: fc.Arbitrary<object[]> = fc.oneof(
  groupArb,
  fc.constantFrom<object[]>(
    [{ $project: { component_name: 1, 'data.readings.temperature': 1 } }],
    [
      {
        $project: {
          _id: 0,
          component_name: 1,
          t: '$data.readings.temperature',
          day: { $dayOfMonth: '$time_received' },
        },
      },
    ],
    [{ $project: { data: 0, tags: 0 } }],
    [{ $project: { 'data.readings': 0, method_name: 0 } }],
    [{ $unset: ['data', 'time_received'] }],
    [{ $unset: 'data.readings.humidity' }],
    [{ $addFields: { 'data.readings.extra': { $literal: 1 }, 'data.copy': '$component_name' } }],
    [{ $unwind: '$tags' }],
    [{ $unwind: '$tags' }, { $sortByCount: '$tags' }],
    [{ $unwind: { path: '$data.detections', includeArrayIndex: 'idx', preserveNullAndEmptyArrays: true } }],
    [
      { $unwind: '$data.detections' },
      {
        $group: {
          _id: '$data.detections.class_name',
          best: { $max: '$data.detections.confidence' },
          n: { $sum: 1 },
        },
      },
    ],
    [{ $sortByCount: '$component_name' }],
    [{ $count: 'n' }],
    // Boundaries no humidity equals: mingo 7 puts a value equal to a lower bound into the previous bucket.
    [
      {
        $bucket: {
          groupBy: '$data.readings.humidity',
          boundaries: [0, 24.5, 49.5, 74.5, 101],
          default: 'other',
          output: { n: { $sum: 1 }, avg: { $avg: '$data.readings.humidity' } },
        },
      },
    ],
    [
      {
        $bucket: {
          groupBy: '$time_received',
          boundaries: [new Date(base), new Date(base + 86_400_000), new Date(base + 2 * 86_400_000)],
          default: 'later',
        },
      },
    ],
    [{ $replaceRoot: { newRoot: '$data.readings' } }],
    [{ $replaceWith: { name: '$component_name', temperature: '$data.readings.temperature' } }],
    [{ $sort: { 'data.readings.temperature': -1, _id: 1 } }, { $limit: 5 }],
    [{ $sort: { 'data.readings.temperature': 1, _id: 1 } }, { $skip: 2 }, { $limit: 4 }],
    [{ $sort: { component_name: 1, time_received: -1, _id: 1 } }],
    [{ $sort: { _id: -1 } }, { $limit: 3 }, { $project: { _id: 1, tags: 1 } }],
  ),
);

const pipelineArb = fc
  .tuple(
    fc.option(matchArb, { nil: undefined }),
    fc.option(addFieldsArb, { nil: undefined }),
    fc.option(shapeArb, { nil: undefined }),
    fc.option(matchArb, { nil: undefined }),
  )
  .map(([match, addFields, shape, laterMatch]) => {
    const stages: object[] = [];
    if (match) stages.push({ $match: match });
    if (addFields) stages.push(addFields);
    if (shape) stages.push(...shape);
    // A second $match only where the document shape is still the readings' shape.
    if (laterMatch && !shape) stages.push({ $match: laterMatch });
    return stages;
  });

/** True when the output order is fully determined (last $sort ends with _id, then only $skip/$limit/$project). */
function isTotallyOrdered(pipeline: readonly object[]): boolean {
  for (let i = pipeline.length - 1; i >= 0; i--) {
    const stage = pipeline[i] as Record<string, unknown>;
    const name = Object.keys(stage)[0] as string;
    if (name === '$limit' || name === '$skip' || name === '$project') continue;
    if (name !== '$sort') return false;
    const keys = Object.keys(stage.$sort as object);
    return keys[keys.length - 1] === '_id';
  }
  return false;
}

/**
 * Where mingo differs from MongoDB, MongoDB wins: `$count` over no documents returns no document in
 * MongoDB (mingo answers `{n: 0}`); `$bucket` outputs only buckets holding at least one document (mingo
 * also lists empty ones).
 */
function mongoExpectation(pipeline: readonly object[], mingoResult: unknown[]): unknown[] {
  const last = pipeline[pipeline.length - 1] as Record<string, unknown> | undefined;
  if (last && '$count' in last && mingoResult.length === 1) {
    const only = mingoResult[0] as Record<string, unknown>;
    if (only[last.$count as string] === 0) return [];
  }
  if (last && '$bucket' in last) {
    return mingoResult.filter((bucket) => {
      const counts = bucket as { count?: number; n?: number };
      return counts.count !== 0 && counts.n !== 0;
    });
  }
  return mingoResult;
}

function cloneDocuments(documents: readonly TestDocument[]): TestDocument[] {
  return documents.map((document) => structuredClone(document));
}

test('compiled pipelines return what mingo returns (property-based, 400 pipelines)', async () => {
  let compared = 0;
  let orderedComparisons = 0;
  await fc.assert(
    fc.asyncProperty(documentsArb, pipelineArb, async (documents, pipeline) => {
      const expected = mongoExpectation(
        pipeline,
        mingoAggregate(cloneDocuments(documents), structuredClone(pipeline)),
      );
      await loadDocuments(db, documents);
      const actual = await runCompiled(db, pipeline);
      compared += 1;
      if (isTotallyOrdered(pipeline)) {
        orderedComparisons += 1;
        assert.deepEqual(
          actual.map((doc) => canonical(doc)),
          expected.map((doc) => canonical(doc)),
        );
      } else {
        assert.deepEqual(canonicalSet(actual), canonicalSet(expected));
      }
    }),
    { numRuns: 400, seed: Number(process.env.MQL_SEED ?? Date.now() % 2_147_483_647), verbose: 1 },
  );
  assert.equal(compared, 400);
  assert.ok(orderedComparisons > 20, `only ${orderedComparisons} ordered comparisons`);
});
