import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { create, fromBinary, type JsonObject, toBinary } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { dataSyncPb } from '@mcloud/protocol';
import fc from 'fast-check';
import { decodeTabularSensorData } from './tabular-sensor-data-decoder.ts';
import { timestampToMicros } from './upload-from-proto.ts';

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
        assert.equal(decoded.timeRequestedUs, timestampToMicros(reference?.timeRequested));
        assert.equal(decoded.timeReceivedUs, timestampToMicros(reference?.timeReceived));
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
    assert.equal(decodeTabularSensorData(bytes)?.timeRequestedUs, 1_700_000_000_123_456n);
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
});
