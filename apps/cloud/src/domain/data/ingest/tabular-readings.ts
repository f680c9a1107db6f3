import { invalidArgument } from '../../errors.ts';
import type { SensorContentInput } from './upload-types.ts';

/**
 * The readings of one tabular upload in columns, every payload already JSON (UTF-8). The API layer's hot
 * path builds this straight from the protobuf bytes (tabular-sensor-data-decoder.ts); other inputs are
 * converted with `tabularReadingsFromContents`. Both give byte-identical JSON for the same Struct.
 */
export interface TabularReadings {
  count: number;
  /** Capture times in microseconds since the Unix epoch; null when the entry had none. */
  timeRequestedUs: (number | null)[];
  timeReceivedUs: (number | null)[];
  /** The JSON array `[p0,p1,…]` of every payload; the idempotency key hashes exactly these bytes. */
  json: Uint8Array;
  /** Payload i is `json[payloadStarts[i], payloadEnds[i])`. */
  payloadStarts: Uint32Array;
  payloadEnds: Uint32Array;
}

/**
 * Readings from generic upload contents (struct values). Throws InvalidArgument naming the
 * entry when one holds binary data or nothing.
 */
export function tabularReadingsFromContents(contents: readonly SensorContentInput[]): TabularReadings {
  const count = contents.length;
  const payloads: string[] = new Array(count);
  const timeRequestedUs: (number | null)[] = new Array(count);
  const timeReceivedUs: (number | null)[] = new Array(count);
  for (let index = 0; index < count; index++) {
    const content = contents[index] as SensorContentInput;
    if (content.data.kind !== 'struct') {
      throw invalidArgument(
        `sensor_contents[${index}]`,
        `a tabular upload needs struct data in every entry (got ${content.data.kind === 'binary' ? 'binary data' : 'no data'})`,
      );
    }
    payloads[index] = JSON.stringify(content.data.value);
    timeRequestedUs[index] = content.timeRequestedUs === undefined ? null : Number(content.timeRequestedUs);
    timeReceivedUs[index] = content.timeReceivedUs === undefined ? null : Number(content.timeReceivedUs);
  }
  const json = Buffer.from(`[${payloads.join(',')}]`);
  const payloadStarts = new Uint32Array(count);
  const payloadEnds = new Uint32Array(count);
  let offset = 1;
  for (let index = 0; index < count; index++) {
    payloadStarts[index] = offset;
    offset += Buffer.byteLength(payloads[index] as string);
    payloadEnds[index] = offset;
    offset += 1; // the comma
  }
  return { count, timeRequestedUs, timeReceivedUs, json, payloadStarts, payloadEnds };
}

/** True for the columnar shape (as opposed to a list of generic contents). */
export function isTabularReadings(
  value: TabularReadings | readonly SensorContentInput[],
): value is TabularReadings {
  return !Array.isArray(value);
}
