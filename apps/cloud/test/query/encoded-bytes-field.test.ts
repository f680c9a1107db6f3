import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { dataPb } from '@mcloud/protocol';
import fc from 'fast-check';
import { encodedRepeatedBytes } from '../../src/api/data/encoded-bytes-field.ts';

// The pre-encoded `raw_data` field must be byte for byte what protobuf-es writes for the field itself.

const schema = dataPb.TabularDataBySQLResponseSchema;
const fieldNumber = schema.field.rawData.number;

function encodedBoth(elements: Uint8Array[]) {
  const plain = toBinary(schema, create(schema, { rawData: elements }));
  const response = create(schema);
  response.$unknown = encodedRepeatedBytes(fieldNumber, elements);
  return { plain, pre: toBinary(schema, response) };
}

test('byte-equal to the encoded field and decoded back as raw_data, for any elements', () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 400 }), { maxLength: 40 }),
      fc.array(fc.integer({ min: 0, max: 70_000 }), { maxLength: 3 }),
      (small, bigLengths) => {
        // Lengths across the 1-, 2- and 3-byte varint boundaries (127/128, 16383/16384).
        const elements = [...small, ...bigLengths.map((n) => new Uint8Array(n).fill(n % 251))];
        const { plain, pre } = encodedBoth(elements);
        assert.deepEqual(pre, plain);
        assert.deepEqual(fromBinary(schema, pre).rawData, elements);
      },
    ),
    { numRuns: 200 },
  );
  for (const length of [0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152]) {
    const { plain, pre } = encodedBoth([new Uint8Array(length), new Uint8Array([length & 0xff])]);
    assert.deepEqual(pre, plain, `length ${length}`);
  }
});

test('views into a larger buffer are written from their own bytes only', () => {
  const shared = new Uint8Array(64).map((_, i) => i);
  const elements = [shared.subarray(3, 10), shared.subarray(40, 41), Buffer.from(shared.buffer, 20, 5)];
  const { plain, pre } = encodedBoth(elements);
  assert.deepEqual(pre, plain);
});

test('no elements: no unknown field; a field number outside 1-15 is refused naming it', () => {
  assert.deepEqual(encodedRepeatedBytes(fieldNumber, []), []);
  assert.throws(
    () => encodedRepeatedBytes(16, [new Uint8Array(1)]),
    /fieldNumber: must be an integer from 1 to 15 \(got 16\)/,
  );
  assert.throws(() => encodedRepeatedBytes(0, [new Uint8Array(1)]), /got 0/);
});
