import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Double, ObjectId, serialize } from 'bson';
import fc from 'fast-check';
import {
  createJsonDocumentConverter,
  createJsonDocumentWriter,
  createRowConverter,
  createRowWriter,
  parsePostgresTimestamp,
  type ResultField,
} from '../../src/domain/data/bson/bson-from-postgres.ts';
import { BsonWriter } from '../../src/domain/data/bson/bson-writer.ts';

/**
 * The direct BSON writer of query results must produce exactly the bytes `bson.serialize` produces for the
 * documents the row converters build (the previous path, kept as the reference): both run on generated
 * PostgreSQL text values and JSON documents, and either both fail or the bytes are equal.
 */

function outcome(run: () => Uint8Array): { bytes?: string; error?: true } {
  try {
    return { bytes: Buffer.from(run()).toString('hex') };
  } catch {
    return { error: true };
  }
}

const jsonLeaf = fc.oneof(
  fc.integer(),
  fc.integer({ min: -2_147_483_649, max: 2_147_483_648 }).map((n) => n * 1000),
  fc.constantFrom(
    2 ** 31,
    -(2 ** 31),
    2 ** 31 - 1,
    -(2 ** 31) - 1,
    2 ** 53 - 1,
    2 ** 53 + 2,
    1e21,
    -0,
    0.5,
    1e-7,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ unit: 'binary' }),
  fc.boolean(),
  fc.constant(null),
);

const extendedJson = fc.oneof(
  fc.integer({ min: -1e13, max: 1e13 }).map((ms) => ({ $date: ms })),
  fc.double({ min: -1e13, max: 1e13, noNaN: true }).map((ms) => ({ $date: ms })),
  fc.constantFrom('2024-03-01T10:00:00Z', 'not a date', '2024-03-01').map((text) => ({ $date: text })),
  fc.constant({ $date: 9e15 }),
  fc.constant({ $date: true }),
  fc.stringMatching(/^[0-9a-fA-F]{24}$/).map((hex) => ({ $oid: hex })),
  fc.constant({ $oid: 'xyz' }),
  fc.constant({ $date: 1, other: 2 }),
);

const { json: jsonValueArb } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    jsonLeaf,
    extendedJson,
    fc.array(tie('json'), { maxLength: 5 }),
    fc.dictionary(
      fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('a', '1', '$x')),
      tie('json'),
      {
        maxKeys: 5,
      },
    ),
  ),
}));

test('a JSON document column is written as bsonFromJson + serialize would write it', () => {
  const reference = createJsonDocumentConverter();
  const direct = createJsonDocumentWriter();
  const writer = new BsonWriter();
  fc.assert(
    fc.property(jsonValueArb, (generated) => {
      // The old path fails on a top-level value that becomes a bson class (a double, an ObjectId); results
      // of compiled MQL are always documents. Scalars are covered by the next test.
      const value =
        typeof generated === 'object' &&
        generated !== null &&
        !Array.isArray(generated) &&
        !('$oid' in generated)
          ? generated
          : { value: generated };
      const text = JSON.stringify(value);
      // The old path also loses `__proto__` keys (an assignment sets the prototype).
      fc.pre(!text.includes('"__proto__"'));
      assert.deepEqual(
        outcome(() => direct(writer, [text])),
        outcome(() => serialize(reference([text]))),
        text,
      );
    }),
    { numRuns: 3000 },
  );
});

test('a JSON column that is not a document comes back as {value}, an absent one as {}', () => {
  const writer = new BsonWriter();
  const write = createJsonDocumentWriter();
  const cases: [string | null, object][] = [
    ['5', { value: 5 }],
    ['2.5', { value: new Double(2.5) }],
    ['[1, "a"]', { value: [1, 'a'] }],
    ['null', { value: null }],
    ['"text"', { value: 'text' }],
    ['{"$date": 1000}', { value: new Date(1000) }],
    ['{"$oid": "0123456789abcdef01234567"}', { value: new ObjectId('0123456789abcdef01234567') }],
    [null, {}],
  ];
  for (const [text, expected] of cases) {
    assert.deepEqual(Buffer.from(write(writer, [text])), serialize(expected), String(text));
  }
});

interface Column {
  field: ResultField;
  value: fc.Arbitrary<string | null>;
}

const timestampText = fc
  .tuple(
    fc.integer({ min: 1, max: 9999 }),
    fc.integer({ min: 1, max: 12 }),
    fc.integer({ min: 1, max: 28 }),
    fc.integer({ min: 0, max: 86_399 }),
    fc.option(fc.integer({ min: 0, max: 999_999 }), { nil: undefined }),
    fc.constantFrom('+00', '-05', '+05:30', '+14'),
  )
  .map(([y, m, d, s, micros, zone]) => {
    const pad = (n: number, w = 2) => String(n).padStart(w, '0');
    const time = `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}`;
    const fraction = micros === undefined ? '' : `.${pad(micros, 6).replace(/0+$/, '') || '0'}`;
    return `${pad(y, 4)}-${pad(m)}-${pad(d)} ${time}${fraction}${zone}`;
  });

const columnArbs: Record<string, Column['value']> = {
  25: fc.oneof(fc.string({ unit: 'binary' }), fc.stringMatching(/^[0-9a-f]{24}$/)),
  16: fc.constantFrom('t', 'f'),
  20: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  21: fc.integer({ min: -32_768, max: 32_767 }).map(String),
  23: fc.integer({ min: -2_147_483_648, max: 2_147_483_647 }).map(String),
  700: fc.oneof(fc.float({ noNaN: true }).map(String), fc.constantFrom('NaN', 'Infinity', '-Infinity')),
  701: fc.oneof(fc.double().map(String), fc.constantFrom('NaN', '-0', '1e+300')),
  1700: fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
    fc.constantFrom('12.500', 'NaN'),
  ),
  1184: fc.oneof(timestampText, fc.constantFrom('infinity', '-infinity')),
  1114: timestampText.map((text) => text.replace(/[+-]\d\d(:\d\d)?$/, '')),
  1082: timestampText.map((text) => text.slice(0, 10)),
  3802: jsonValueArb.map((value) => JSON.stringify(value)).filter((text) => !text.includes('"__proto__"')),
  114: fc.constantFrom('{"a": 1, "a": 2}', '[1, 2.5, "x"]', '{"$date": 5}'),
  17: fc.uint8Array({ maxLength: 8 }).map((bytes) => `\\x${Buffer.from(bytes).toString('hex')}`),
  1009: fc.constantFrom('{a,"b c",NULL}', '{}', '{{a,b},{c,d}}'),
  1007: fc.constantFrom('{1,2,NULL}', '{}', '{-2147483648}'),
  1016: fc.constantFrom('{1,9007199254740993}', '{NULL}'),
  1185: fc.constantFrom('{"2024-01-01 00:00:00+00",infinity}'),
  3807: fc.constantFrom('{"{\\"a\\": 1}","[2.5]"}'),
  1186: fc.constantFrom('1 day 02:00:00'),
  2950: fc.constantFrom('0829c204-c9b3-437c-b475-da4060f572ba'),
};

const columnArb: fc.Arbitrary<Column> = fc
  .tuple(fc.constantFrom(...Object.keys(columnArbs)), fc.constantFrom('_id', 'a', 'b', 'data', 'é'))
  .map(([type, name]) => ({
    field: { name, dataTypeID: Number(type) },
    value: fc.option(columnArbs[type] as fc.Arbitrary<string>, { nil: null, freq: 8 }),
  }));

test('a row of PostgreSQL text values is written as the row converter + serialize would write it', () => {
  const writer = new BsonWriter();
  fc.assert(
    fc.property(
      fc
        .array(columnArb, { minLength: 1, maxLength: 6 })
        .chain((columns) =>
          fc.tuple(fc.constant(columns), fc.tuple(...columns.map((column) => column.value))),
        ),
      ([columns, row]) => {
        const fields = columns.map((column) => column.field);
        assert.deepEqual(
          outcome(() => createRowWriter(fields)(writer, row)),
          outcome(() => serialize(createRowConverter(fields)(row))),
          JSON.stringify({ fields, row }),
        );
      },
    ),
    { numRuns: 3000 },
  );
});

test('documents stay intact when a later, larger document moves the writer to a new buffer', () => {
  const writer = new BsonWriter();
  const write = createRowWriter([
    { name: '_id', dataTypeID: 25 },
    { name: 'data', dataTypeID: 3802 },
  ]);
  const rows: string[][] = [];
  const written: Uint8Array[] = [];
  for (let i = 0; i < 3000; i++) {
    const size = i === 1500 ? 700_000 : 100 + (i % 7) * 50;
    const row = [
      `${String(i).padStart(24, '0')}`,
      JSON.stringify({ i, text: 'x'.repeat(size), n: [i, i / 2] }),
    ];
    rows.push(row);
    written.push(write(writer, row));
  }
  const reference = createRowConverter([
    { name: '_id', dataTypeID: 25 },
    { name: 'data', dataTypeID: 3802 },
  ]);
  for (const [i, row] of rows.entries()) {
    assert.deepEqual(Buffer.from(written[i] as Uint8Array), serialize(reference(row)), `document ${i}`);
  }
});

test('PostgreSQL timestamptz text → epoch ms, UTC fast path and other offsets alike', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) }),
      fc.integer({ min: 0, max: 999_999 }),
      fc.constantFrom(0, 5 * 60, -(5 * 60 + 30), 14 * 60),
      (second, micros, offsetMinutes) => {
        const local = new Date(Math.floor(second / 1000) * 1000 + offsetMinutes * 60_000).toISOString();
        const fraction = micros === 0 ? '' : `.${String(micros).padStart(6, '0').replace(/0+$/, '')}`;
        const sign = offsetMinutes < 0 ? '-' : '+';
        const zone = `${sign}${String(Math.floor(Math.abs(offsetMinutes) / 60)).padStart(2, '0')}${Math.abs(offsetMinutes) % 60 ? `:${String(Math.abs(offsetMinutes) % 60).padStart(2, '0')}` : ''}`;
        const text = `${local.slice(0, 10)} ${local.slice(11, 19)}${fraction}${zone}`;
        const expected = Math.floor(second / 1000) * 1000 + Math.floor(micros / 1000);
        assert.equal(parsePostgresTimestamp(text), expected, text);
      },
    ),
    { numRuns: 2000 },
  );
  assert.ok(Number.isNaN(parsePostgresTimestamp('infinity')));
  assert.ok(Number.isNaN(parsePostgresTimestamp('2024-01-0x 00:00:00+00')));
});

test('timestamps of one minute (the cached minute) and of the next stay exact; a bad digit is still refused', () => {
  const cases: [string, number][] = [
    ['2026-06-05 00:53:39.131+00', Date.UTC(2026, 5, 5, 0, 53, 39, 131)],
    ['2026-06-05 00:53:00+00', Date.UTC(2026, 5, 5, 0, 53, 0, 0)],
    ['2026-06-05 00:53:59.999999+00', Date.UTC(2026, 5, 5, 0, 53, 59, 999)],
    ['2026-06-05 00:53:07.5+00', Date.UTC(2026, 5, 5, 0, 53, 7, 500)],
    ['2026-06-05 00:53:07.05+00', Date.UTC(2026, 5, 5, 0, 53, 7, 50)],
    ['2026-06-05 00:54:01.291+00', Date.UTC(2026, 5, 5, 0, 54, 1, 291)],
    ['2026-06-05 00:53:39.131+00', Date.UTC(2026, 5, 5, 0, 53, 39, 131)],
    ['1969-12-31 23:59:59.999+00', -1],
  ];
  for (const [text, expected] of cases) assert.equal(parsePostgresTimestamp(text), expected, text);
  parsePostgresTimestamp('2026-06-05 00:53:39.131+00');
  assert.ok(Number.isNaN(parsePostgresTimestamp('2026-06-05 00:53:3x.131+00')));
  assert.ok(Number.isNaN(parsePostgresTimestamp('2026-06-05 00:53:39.1x1+00')));
});

test('datetimes before 1970 and far from it are written as bson.serialize writes them', () => {
  const writer = new BsonWriter();
  for (const ms of [
    0, -1, -4294967296, -4294967297, 4294967295, 4294967296, 8.64e15, -8.64e15, -62135596800000,
  ]) {
    writer.beginDocument();
    writer.date('t', ms);
    assert.deepEqual(Buffer.from(writer.endDocument()), serialize({ t: new Date(ms) }), String(ms));
  }
});
