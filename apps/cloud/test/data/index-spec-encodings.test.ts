import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseIndexSpec } from '../../src/domain/data/indexes/index-spec.ts';
import { isDomainError } from '../../src/domain/errors.ts';

// The three `index_spec` encodings of wire-protocol §2.4, with the bytes built by hand (not by the bson
// package the parser uses), and malformed specs naming the field.

/** A tiny BSON writer: enough element types to write what the clients send. */
type BsonValue =
  | { int32: number }
  | { int64: bigint }
  | { double: number }
  | { bool: boolean }
  | { string: string }
  | { doc: [string, BsonValue][] };

function cstring(text: string): Buffer {
  return Buffer.concat([Buffer.from(text, 'utf8'), Buffer.from([0])]);
}

function bsonDocument(entries: [string, BsonValue][]): Buffer {
  const body: Buffer[] = [];
  for (const [name, value] of entries) {
    if ('int32' in value) {
      const bytes = Buffer.alloc(4);
      bytes.writeInt32LE(value.int32);
      body.push(Buffer.from([0x10]), cstring(name), bytes);
    } else if ('int64' in value) {
      const bytes = Buffer.alloc(8);
      bytes.writeBigInt64LE(value.int64);
      body.push(Buffer.from([0x12]), cstring(name), bytes);
    } else if ('double' in value) {
      const bytes = Buffer.alloc(8);
      bytes.writeDoubleLE(value.double);
      body.push(Buffer.from([0x01]), cstring(name), bytes);
    } else if ('bool' in value) {
      body.push(Buffer.from([0x08]), cstring(name), Buffer.from([value.bool ? 1 : 0]));
    } else if ('string' in value) {
      const text = cstring(value.string);
      const length = Buffer.alloc(4);
      length.writeInt32LE(text.length);
      body.push(Buffer.from([0x02]), cstring(name), length, text);
    } else {
      body.push(Buffer.from([0x03]), cstring(name), bsonDocument(value.doc));
    }
  }
  const content = Buffer.concat(body);
  const length = Buffer.alloc(4);
  length.writeInt32LE(content.length + 5);
  return Buffer.concat([length, content, Buffer.from([0])]);
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function expectInvalid(elements: Uint8Array[], message: RegExp, documents: 'readings' | 'sink' = 'readings') {
  assert.throws(
    () => parseIndexSpec(elements, documents),
    (error: unknown) => {
      assert.ok(isDomainError(error), String(error));
      assert.equal(error.code, 'InvalidArgument');
      assert.match(error.message, message);
      return true;
    },
  );
}

describe('index_spec encodings', () => {
  const expected = {
    key: { 'data.readings.temperature': 1, time_received: -1 },
    options: { name: 'temp', unique: true },
  };

  test('TS SDK: one BSON {keys, options} (bsonfy writes whole numbers as int32)', () => {
    const bytes = bsonDocument([
      [
        'keys',
        {
          doc: [
            ['data.readings.temperature', { int32: 1 }],
            ['time_received', { int32: -1 }],
          ],
        },
      ],
      [
        'options',
        {
          doc: [
            ['name', { string: 'temp' }],
            ['unique', { bool: true }],
          ],
        },
      ],
    ]);
    const spec = parseIndexSpec([bytes], 'readings');
    assert.deepEqual(JSON.parse(spec.json), expected);
    assert.deepEqual(spec.keys, [
      { path: 'data.readings.temperature', direction: 1 },
      { path: 'time_received', direction: -1 },
    ]);
    assert.equal(spec.unique, true);
  });

  test('Python: one BSON of the dict given — {key, options} with int64/double directions, or the bare key document', () => {
    const wrapped = bsonDocument([
      [
        'key',
        {
          doc: [
            ['data.readings.temperature', { int64: 1n }],
            ['time_received', { double: -1 }],
          ],
        },
      ],
      [
        'options',
        {
          doc: [
            ['name', { string: 'temp' }],
            ['unique', { bool: true }],
          ],
        },
      ],
    ]);
    assert.deepEqual(JSON.parse(parseIndexSpec([wrapped], 'readings').json), expected);
    const bare = bsonDocument([
      ['data.readings.temperature', { int32: 1 }],
      ['time_received', { int32: -1 }],
    ]);
    assert.deepEqual(JSON.parse(parseIndexSpec([bare], 'readings').json), {
      key: expected.key,
      options: { name: 'data.readings.temperature_1_time_received_-1' },
    });
  });

  test('viam CLI: raw JSON bytes, element 0 the key, element 1 the options (compact or indented)', () => {
    const compact = parseIndexSpec([json(expected.key), json(expected.options)], 'readings');
    assert.deepEqual(JSON.parse(compact.json), expected);
    const indented = new TextEncoder().encode(JSON.stringify(expected.key, null, 2));
    assert.deepEqual(JSON.parse(parseIndexSpec([indented], 'readings').json).key, expected.key);
    // Key order is the index's column order, kept as sent.
    const reversed = parseIndexSpec(
      [json({ time_received: -1, 'data.readings.temperature': 1 })],
      'readings',
    );
    assert.deepEqual(
      reversed.keys.map((key) => key.path),
      ['time_received', 'data.readings.temperature'],
    );
  });

  test('pipeline sink documents: any path; capture-time rules do not apply', () => {
    const spec = parseIndexSpec([json({ 'summary.avg': -1, _viam_pipeline_run: 1 })], 'sink');
    assert.deepEqual(
      spec.keys.map((key) => key.path),
      ['summary.avg', '_viam_pipeline_run'],
    );
    const partial = parseIndexSpec(
      [json({ count: 1 }), json({ partialFilterExpression: { count: { $gt: 5 } } })],
      'sink',
    );
    assert.deepEqual(partial.partial, [{ path: 'count', op: 'gt', value: 5 }]);
  });

  test('malformed specs answer InvalidArgument naming the field', () => {
    const badBson = bsonDocument([['data.a', { int32: 1 }]]);
    badBson[4] = 0x7f; // an unknown element type inside a well-framed document
    expectInvalid([badBson], /^index_spec\[0\]: is not a valid BSON document/);
    expectInvalid(
      [new Uint8Array([0xff, 0xfe, 0x00])],
      /^index_spec\[0\]: is neither a BSON document nor JSON text/,
    );
    expectInvalid([json([1, 2])], /^index_spec\[0\]: must be a JSON object/);
    expectInvalid(
      [json({ 'data.a': 1 }), new TextEncoder().encode('{"name": ')],
      /^index_spec\[1\]: is neither/,
    );
    expectInvalid([], /^index_spec: is required/);
    expectInvalid([json({}), json({}), json({})], /^index_spec: may have at most 2 elements/);
    expectInvalid([json({ keys: { 'data.a': 1 }, extra: true })], /^index_spec\.extra: is not allowed/);
    expectInvalid([json({ 'data.a': 2 })], /^index_spec\.keys\.data\.a: must be 1 or -1.*\(got "2"\)/);
    expectInvalid([json({ 'data.a': 'hashed' })], /^index_spec\.keys\.data\.a: must be 1 or -1/);
    expectInvalid([json({ component_name: 1 })], /^index_spec\.keys\.component_name: only time_requested/);
    expectInvalid([json({ 'data.$x': 1 })], /^index_spec\.keys\.data\.\$x: a path needs/);
    expectInvalid([json({ 'a..b': 1 })], /^index_spec\.keys\.a\.\.b: a path needs/, 'sink');
    expectInvalid(
      [json(Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`data.k${i}`, 1])))],
      /^index_spec\.keys: may have at most 6 fields \(got 7\)/,
    );
    expectInvalid(
      [json({ 'data.a': 1 }), json({ unique: 'yes' })],
      /^index_spec\.options\.unique: must be a boolean/,
    );
    expectInvalid([json({ 'data.a': 1 }), json({ name: '' })], /^index_spec\.options\.name: must be/);
    expectInvalid(
      [json({ 'data.a': 1 }), json({ name: 'x'.repeat(101) })],
      /^index_spec\.options\.name: must be at most 100/,
    );
    expectInvalid(
      [json({ 'data.a': 1 }), json({ expireAfterSeconds: 5 })],
      /^index_spec\.options\.expireAfterSeconds: is not supported/,
    );
    expectInvalid(
      [json({ 'data.a': 1 }), json({ partialFilterExpression: { time_received: { $gt: 1 } } })],
      /^index_spec\.options\.partialFilterExpression\.time_received\.\$gt: capture times only take \$exists/,
    );
    expectInvalid(
      [json({ 'data.a': 1 }), json({ partialFilterExpression: { 'data.a': { $exists: false } } })],
      /partialFilterExpression\.data\.a\.\$exists: only \$exists: true/,
    );
    expectInvalid(
      [json({ 'data.a': 1 }), json({ partialFilterExpression: { 'data.a': { $gt: [1] } } })],
      /partialFilterExpression\.data\.a\.\$gt: must be a string, finite number or boolean/,
    );
  });
});
