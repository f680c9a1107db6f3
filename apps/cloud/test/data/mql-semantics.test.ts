import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { Database } from '../../src/infra/postgres/database.ts';
import { createMigratedDatabase, type MigratedDatabase } from '../support/test-database.ts';
import { loadDocuments, runCompiled, type TestDocument } from './mql-support.ts';

/**
 * MongoDB semantics where mingo (the differential test's reference) differs from MongoDB, checked
 * against the documented MongoDB behaviour directly.
 */

let database: MigratedDatabase;
let db: Database;
const base = Date.parse('2025-03-10T00:00:00Z');

function reading(id: string, fields: Partial<TestDocument>): TestDocument {
  return {
    _id: id,
    component_name: 'sensor',
    method_name: 'Readings',
    time_received: new Date(base),
    tags: [],
    data: {},
    ...fields,
  };
}

const documents = [
  reading('r1', { tags: ['a', 'z'], data: { readings: { temperature: 10, humidity: 25 } } }),
  reading('r2', { tags: ['m'], data: { readings: { temperature: 'hot' } } }),
  reading('r3', { tags: [], data: { readings: { temperature: null, humidity: 50 } } }),
  reading('r4', { tags: ['b', 'c'], data: {} }),
];

before(async () => {
  database = await createMigratedDatabase(2);
  db = database.db;
  await loadDocuments(db, documents);
});

after(() => database.close());

const ids = (rows: unknown[]) => rows.map((row) => (row as { _id: string })._id);

test('$sort by an array field: smallest element ascending, largest descending, [] before everything', async () => {
  assert.deepEqual(ids(await runCompiled(db, [{ $sort: { tags: 1, _id: 1 } }])), ['r3', 'r1', 'r4', 'r2']);
  assert.deepEqual(ids(await runCompiled(db, [{ $sort: { tags: -1, _id: 1 } }])), ['r1', 'r2', 'r4', 'r3']);
});

test('$sort by type: missing and null tie, then numbers, then strings', async () => {
  const ascending = await runCompiled(db, [{ $sort: { 'data.readings.temperature': 1, _id: 1 } }]);
  assert.deepEqual(ids(ascending), ['r3', 'r4', 'r1', 'r2']);
});

test('aggregation comparisons use BSON order across types; missing is less than null', async () => {
  const rows = await runCompiled(db, [
    {
      $project: {
        lt: { $lt: ['$data.readings.temperature', 0] },
        gtNumber: { $gt: ['$data.readings.temperature', 1000] },
        isNull: { $eq: ['$data.readings.temperature', null] },
      },
    },
    { $sort: { _id: 1 } },
  ]);
  assert.deepEqual(rows, [
    { _id: 'r1', lt: false, gtNumber: false, isNull: false },
    { _id: 'r2', lt: false, gtNumber: true, isNull: false },
    { _id: 'r3', lt: true, gtNumber: false, isNull: true },
    { _id: 'r4', lt: true, gtNumber: false, isNull: false },
  ]);
});

test('number accumulators read paths whose steps need quoting, below computed documents too', async () => {
  const key = 'q"\\ é x';
  // Two documents have no humidity: their `odd` is missing, and so is every path below it.
  const rows = await runCompiled(db, [
    { $addFields: { odd: { [key]: { ü: '$data.readings.humidity' } } } },
    {
      $group: {
        _id: null,
        sum: { $sum: `$odd.${key}.ü` },
        avg: { $avg: `$odd.${key}.ü` },
        max: { $max: `$odd.${key}.ü` },
        min: { $min: `$odd.${key}.ü` },
      },
    },
  ]);
  assert.deepEqual(rows, [{ _id: null, sum: 75, avg: 37.5, max: 50, min: 25 }]);
});

test('$push and $addToSet skip missing values; $count and $bucket emit nothing for no documents', async () => {
  const [group] = await runCompiled(db, [
    { $sort: { _id: 1 } },
    {
      $group: {
        _id: null,
        pushed: { $push: '$data.readings.humidity' },
        set: { $addToSet: '$data.readings.humidity' },
      },
    },
  ]);
  assert.deepEqual(group, { _id: null, pushed: [25, 50], set: [25, 50] });
  assert.deepEqual(await runCompiled(db, [{ $match: { component_name: 'none' } }, { $count: 'n' }]), []);
  assert.deepEqual(
    await runCompiled(db, [
      { $match: { component_name: 'none' } },
      { $group: { _id: null, n: { $sum: 1 } } },
    ]),
    [],
  );
  const buckets = await runCompiled(db, [
    { $bucket: { groupBy: '$data.readings.humidity', boundaries: [0, 25, 50, 100], default: 'none' } },
  ]);
  assert.deepEqual(buckets, [
    { _id: 25, count: 1 },
    { _id: 50, count: 1 },
    { _id: 'none', count: 2 },
  ]);
});

test('a value outside $bucket boundaries without default, or $replaceRoot to a non-document, is an error', async () => {
  await assert.rejects(
    runCompiled(db, [{ $bucket: { groupBy: '$data.readings.humidity', boundaries: [0, 30] } }]),
    /falls outside the boundaries and there is no default/,
  );
  await assert.rejects(
    runCompiled(db, [{ $replaceRoot: { newRoot: '$data.readings.temperature' } }]),
    /newRoot must evaluate to a document/,
  );
});

test('$dateTrunc bins from 2000-01-01 and weeks start on Sunday unless told otherwise', async () => {
  const [row] = await runCompiled(db, [
    { $limit: 1 },
    {
      $project: {
        _id: 0,
        week: { $dateTrunc: { date: new Date('2025-03-12T10:00:00Z'), unit: 'week' } },
        monday: {
          $dateTrunc: { date: new Date('2025-03-12T10:00:00Z'), unit: 'week', startOfWeek: 'monday' },
        },
        quarter: { $dateTrunc: { date: new Date('2025-05-12T10:00:00Z'), unit: 'quarter' } },
        twoHours: { $dateTrunc: { date: new Date('2025-03-12T11:30:00Z'), unit: 'hour', binSize: 2 } },
        local: {
          $dateToString: {
            date: new Date('2025-03-12T23:30:00Z'),
            format: '%Y-%m-%d %H:%M',
            timezone: 'Europe/Berlin',
          },
        },
        offset: {
          $dateToString: { date: new Date('2025-03-12T23:30:00Z'), format: '%H:%M', timezone: '+02:00' },
        },
      },
    },
  ]);
  assert.deepEqual(row, {
    week: new Date('2025-03-09T00:00:00Z'),
    monday: new Date('2025-03-10T00:00:00Z'),
    quarter: new Date('2025-04-01T00:00:00Z'),
    twoHours: new Date('2025-03-12T10:00:00Z'),
    local: '2025-03-13 00:30',
    offset: '01:30',
  });
});

test('$min/$max compare whole values in BSON order: arrays above numbers and strings, element by element', async () => {
  const levels: unknown[] = [[9, 1], [10], 3, 'x', [9], [-1, 5], { v: 1 }];
  await loadDocuments(
    db,
    levels.map((level, i) => reading(`m${i}`, { component_name: 'minmax', data: { level } })),
  );
  try {
    const [extremes] = await runCompiled(db, [
      { $group: { _id: null, max: { $max: '$data.level' }, min: { $min: '$data.level' } } },
    ]);
    assert.deepEqual(extremes, { _id: null, max: [10], min: 3 });
    const [arrays] = await runCompiled(db, [
      { $match: { 'data.level': { $type: 'array' } } },
      { $group: { _id: null, max: { $max: '$data.level' }, min: { $min: '$data.level' } } },
    ]);
    assert.deepEqual(arrays, { _id: null, max: [10], min: [-1, 5] });
  } finally {
    await loadDocuments(db, documents);
  }
});

test('the order key of numbers inside arrays sorts like the numbers (property-based)', async () => {
  const number = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.integer({ min: -100_000, max: 100_000 }).map((n) => n / 1000),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(number, { minLength: 2, maxLength: 30 }), async (values) => {
      const result = await db.query<{ v: number }>(
        `SELECT v::float8 AS v FROM unnest($1::numeric[]) AS v
         ORDER BY sensordata.mql_order_key(to_jsonb(ARRAY[v])) COLLATE "C"`,
        [values.map((value) => (Object.is(value, -0) ? '0' : String(value)))],
      );
      const sorted = [...values].map((value) => (Object.is(value, -0) ? 0 : value)).sort((a, b) => a - b);
      assert.deepEqual(
        result.rows.map((row) => row.v),
        sorted,
      );
    }),
    { numRuns: 100 },
  );
});
