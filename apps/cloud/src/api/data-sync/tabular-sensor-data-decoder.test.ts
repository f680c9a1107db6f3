import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { create, fromBinary, type JsonObject, toBinary } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { dataSyncPb } from '@mcloud/protocol';
import fc from 'fast-check';
import { tabularReadingsFromContents } from '../../domain/data/ingest/tabular-readings.ts';
import { decodeTabularReadings } from './tabular-sensor-data-decoder.ts';
import { sensorContentFromProto, timestampToMicros } from './upload-from-proto.ts';

/** One entry through the decoder: its payload JSON and times (undefined when it leaves the fast path). */
function decodeTabularSensorData(bytes: Uint8Array) {
  const readings = decodeTabularReadings([bytes]);
  if (!readings) return undefined;
  const json = Buffer.from(readings.json).toString('utf8');
  assert.equal(json, `[${Buffer.from(readings.json.subarray(1, -1)).toString('utf8')}]`);
  return {
    json: Buffer.from(
      readings.json.subarray(readings.payloadStarts[0] as number, readings.payloadEnds[0] as number),
    ).toString('utf8'),
    timeRequestedUs: readings.timeRequestedUs[0],
    timeReceivedUs: readings.timeReceivedUs[0],
  };
}

function micros(timestamp: Parameters<typeof timestampToMicros>[0]): number | null {
  const value = timestampToMicros(timestamp);
  return value === undefined ? null : Number(value);
}

/** What the protobuf-es path stores for the same bytes: the decoded Struct through JSON.stringify. */
function referenceJson(bytes: Uint8Array): string {
  const message = fromBinary(dataSyncPb.SensorDataSchema, bytes);
  assert.equal(message.data.case, 'struct');
  return JSON.stringify(message.data.value);
}

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.string({ unit: 'binary' }),
    fc.array(tie('value'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc.dictionary(fc.string({ unit: 'binary', maxLength: 12 }), tie('value'), { maxKeys: 6 }),
}));

const sensorData = fc.record({
  readings: jsonValue.object as fc.Arbitrary<JsonObject>,
  requestedMs: fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: undefined }),
  receivedMs: fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: undefined }),
});

function encode(sample: {
  readings: JsonObject;
  requestedMs: number | undefined;
  receivedMs: number | undefined;
}): Uint8Array {
  const metadata =
    sample.requestedMs === undefined && sample.receivedMs === undefined
      ? undefined
      : create(dataSyncPb.SensorMetadataSchema, {
          timeRequested: sample.requestedMs === undefined ? undefined : timestampFromMs(sample.requestedMs),
          timeReceived: sample.receivedMs === undefined ? undefined : timestampFromMs(sample.receivedMs),
        });
  return toBinary(
    dataSyncPb.SensorDataSchema,
    create(dataSyncPb.SensorDataSchema, { metadata, data: { case: 'struct', value: sample.readings } }),
  );
}

describe('decodeTabularSensorData', () => {
  test('equals the protobuf-es decode + JSON.stringify for generated readings and timestamps', () => {
    fc.assert(
      fc.property(sensorData, (sample) => {
        const bytes = encode(sample);
        const decoded = decodeTabularSensorData(bytes);
        assert.ok(decoded, 'the common shape must take the fast path');
        assert.equal(decoded.json, referenceJson(bytes));
        const reference = fromBinary(dataSyncPb.SensorDataSchema, bytes).metadata;
        assert.equal(decoded.timeRequestedUs, micros(reference?.timeRequested));
        assert.equal(decoded.timeReceivedUs, micros(reference?.timeReceived));
      }),
      { numRuns: 2000 },
    );
  });

  test('strings around the short-ASCII fast path: lengths 63-65 and long, quotes, escapes, non-ASCII', () => {
    const values = [
      'a'.repeat(63),
      'b'.repeat(64),
      'c'.repeat(65),
      'd'.repeat(500),
      'say "hi"',
      'back\\slash',
      'tab\t',
      'é',
      '😀',
      '',
    ];
    const readings = Object.fromEntries(values.map((value, index) => [`${value}-${index}`, value]));
    const bytes = encode({ readings, requestedMs: undefined, receivedMs: undefined });
    assert.equal(decodeTabularSensorData(bytes)?.json, referenceJson(bytes));
  });

  test('nanoseconds are truncated to microseconds like the protobuf-es path', () => {
    const bytes = toBinary(
      dataSyncPb.SensorDataSchema,
      create(dataSyncPb.SensorDataSchema, {
        metadata: { timeRequested: { seconds: 1_700_000_000n, nanos: 123_456_789 } },
        data: { case: 'struct', value: { a: 1 } },
      }),
    );
    assert.equal(decodeTabularSensorData(bytes)?.timeRequestedUs, 1_700_000_000_123_456);
  });

  test('non-finite numbers and empty Values become null, the last oneof member wins', () => {
    // Struct{fields: {"n": Value{number_value: NaN}, "e": Value{}, "w": Value{string "x", then bool true}}}
    const nanValue = [0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f];
    const entry = (key: string, value: number[]) => {
      const body = [0x0a, key.length, ...Buffer.from(key), 0x12, value.length, ...value];
      return [0x0a, body.length, ...body];
    };
    const fields = [...entry('n', nanValue), ...entry('e', []), ...entry('w', [0x1a, 1, 0x78, 0x20, 1])];
    const bytes = Uint8Array.from([0x12, fields.length, ...fields]);
    assert.equal(decodeTabularSensorData(bytes)?.json, referenceJson(bytes));
    assert.equal(decodeTabularSensorData(bytes)?.json, '{"n":null,"e":null,"w":true}');
  });

  test('binary data, MIME types, annotations, negative times and malformed bytes leave the fast path', () => {
    const cases: Uint8Array[] = [
      toBinary(
        dataSyncPb.SensorDataSchema,
        create(dataSyncPb.SensorDataSchema, { data: { case: 'binary', value: Uint8Array.of(1, 2) } }),
      ),
      toBinary(
        dataSyncPb.SensorDataSchema,
        create(dataSyncPb.SensorDataSchema, {
          metadata: { mimeType: dataSyncPb.MimeType.IMAGE_JPEG },
          data: { case: 'struct', value: {} },
        }),
      ),
      toBinary(
        dataSyncPb.SensorDataSchema,
        create(dataSyncPb.SensorDataSchema, {
          metadata: { annotations: { bboxes: [{ label: 'x' }] } },
          data: { case: 'struct', value: {} },
        }),
      ),
      toBinary(
        dataSyncPb.SensorDataSchema,
        create(dataSyncPb.SensorDataSchema, {
          metadata: { timeRequested: { seconds: -5n, nanos: 0 } },
          data: { case: 'struct', value: {} },
        }),
      ),
      Uint8Array.of(0x12, 0x05, 0x0a), // truncated
      new Uint8Array(0), // no data at all
    ];
    for (const bytes of cases) assert.equal(decodeTabularSensorData(bytes), undefined);
  });

  test('a whole upload: one JSON array, offsets, times, byte-identical to the generic path (same idempotency key)', () => {
    fc.assert(
      fc.property(fc.array(sensorData, { minLength: 1, maxLength: 8 }), (samples) => {
        const contents = samples.map(encode);
        const fast = decodeTabularReadings(contents);
        assert.ok(fast);
        const generic = tabularReadingsFromContents(
          contents.map((bytes) => sensorContentFromProto(fromBinary(dataSyncPb.SensorDataSchema, bytes))),
        );
        assert.equal(Buffer.from(fast.json).toString('utf8'), `[${contents.map(referenceJson).join(',')}]`);
        assert.deepEqual(Buffer.from(fast.json), Buffer.from(generic.json));
        assert.deepEqual([...fast.payloadStarts], [...generic.payloadStarts]);
        assert.deepEqual([...fast.payloadEnds], [...generic.payloadEnds]);
        assert.deepEqual(fast.timeRequestedUs, generic.timeRequestedUs);
        assert.deepEqual(fast.timeReceivedUs, generic.timeReceivedUs);
        assert.equal(fast.count, samples.length);
      }),
      { numRuns: 300 },
    );
    const one = encode({ readings: { a: 1 }, requestedMs: 1, receivedMs: undefined });
    const binary = toBinary(
      dataSyncPb.SensorDataSchema,
      create(dataSyncPb.SensorDataSchema, { data: { case: 'binary', value: Uint8Array.of(1) } }),
    );
    assert.equal(decodeTabularReadings([one, binary, one]), undefined, 'one odd entry: the whole upload');
    assert.equal(decodeTabularReadings([])?.json.length, 2, 'no entries: `[]`');
  });

  test('numbers are written as String() writes them: decimals, integers, signs, 1e9 boundary, exponents', () => {
    const decimals = fc
      .tuple(fc.integer({ min: -2_000_000_000_000, max: 2_000_000_000_000 }), fc.integer({ min: 0, max: 8 }))
      .map(([integer, digits]) => integer / 10 ** digits);
    const special = [
      0,
      -0,
      1e9,
      1e9 - 1e-6,
      999_999_999.999999,
      -999_999_999.123456,
      1e-6,
      1e-7,
      5e-7,
      0.1 + 0.2,
      1.005,
      123456789.12345679,
      2 ** 53,
      1e21,
      1.7976931348623157e308,
      5e-324,
    ];
    fc.assert(
      fc.property(fc.oneof(decimals, fc.double({ noNaN: true }), fc.constantFrom(...special)), (value) => {
        const bytes = encode({ readings: { v: value }, requestedMs: undefined, receivedMs: undefined });
        assert.equal(decodeTabularSensorData(bytes)?.json, referenceJson(bytes));
      }),
      { numRuns: 5000 },
    );
  });

  test('output larger than twice the input (escapes) grows the buffer', () => {
    const readings = { controls: '\u0001'.repeat(5000), quotes: '"'.repeat(3000), é: 'ü'.repeat(100) };
    const bytes = encode({ readings, requestedMs: 5, receivedMs: 6 });
    assert.equal(decodeTabularSensorData(bytes)?.json, referenceJson(bytes));
  });

  test('far-future times, and a replaced but malformed map value, leave the fast path', () => {
    const future = toBinary(
      dataSyncPb.SensorDataSchema,
      create(dataSyncPb.SensorDataSchema, {
        metadata: { timeReceived: { seconds: 200_000_000_000n, nanos: 0 } },
        data: { case: 'struct', value: { a: 1 } },
      }),
    );
    assert.equal(decodeTabularSensorData(future), undefined);
    // Struct{fields: {"k": Value{<truncated>}, then Value{bool true} for the same entry}}
    const entryBody = [0x0a, 1, 0x6b, 0x12, 2, 0x1a, 0x05, 0x12, 2, 0x20, 1];
    const fields = [0x0a, entryBody.length, ...entryBody];
    assert.equal(decodeTabularSensorData(Uint8Array.from([0x12, fields.length, ...fields])), undefined);
    // The same with a valid first value: the last one wins, as in protobuf-es.
    const validBody = [0x0a, 1, 0x6b, 0x12, 2, 0x20, 0, 0x12, 2, 0x20, 1];
    const valid = Uint8Array.from([0x12, validBody.length + 2, 0x0a, validBody.length, ...validBody]);
    assert.equal(decodeTabularSensorData(valid)?.json, '{"k":true}');
    assert.equal(decodeTabularSensorData(valid)?.json, referenceJson(valid));
  });
});
