import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, test } from 'node:test';
import { from as copyFrom } from 'pg-copy-streams';
import {
  binaryCopyHeader,
  binaryCopyTrailer,
  encodeReadingRows,
  readingCopyColumns,
} from '../../src/domain/data/ingest/reading-copy-rows.ts';
import { ensureReadingPartitions, monthIndexOf } from '../../src/domain/data/ingest/reading-partitions.ts';
import { tabularReadingsFromContents } from '../../src/domain/data/ingest/tabular-readings.ts';
import type { JsonObject } from '../../src/domain/data/ingest/upload-types.ts';
import { createDatabase, type Database } from '../../src/infra/postgres/database.ts';
import { migrate } from '../../src/infra/postgres/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/test-database.ts';

let testDb: TestDatabase;
let db: Database;

before(async () => {
  testDb = await createTestDatabase();
  db = createDatabase(testDb.url);
  await migrate(db);
});
after(async () => {
  await db?.end();
  await testDb?.drop();
});

const organizationId = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

test('binary COPY rows store exactly the values given: µs timestamps either side of 2000, NULLs, JSON', async () => {
  const requested = [
    1, // 1970-01-01T00:00:00.000001Z
    946_684_799_999_999, // 1999-12-31T23:59:59.999999Z (negative in PostgreSQL's epoch)
    946_684_800_000_000, // 2000-01-01T00:00:00Z (zero)
    1_763_700_000_123_457,
    null,
    null,
  ];
  const received = [2, null, 946_684_800_000_001, 1_763_700_000_123_999, 4_102_444_800_000_000, null];
  const payloads: JsonObject[] = [
    { a: 1 },
    { text: 'tab\there "quoted" back\\slash é 😀' },
    { nested: { list: [1, 2.5, null, true, 'x'] } },
    {},
    { big: 1e300, small: -5e-324 },
    { s: 'x'.repeat(10_000) },
  ];
  const readings = tabularReadingsFromContents(
    payloads.map((value, index) => ({
      mimeType: '',
      boundingBoxes: [],
      timeRequestedUs: requested[index] === null ? undefined : BigInt(requested[index] as number),
      timeReceivedUs: received[index] === null ? undefined : BigInt(received[index] as number),
      data: { kind: 'struct' as const, value },
    })),
  );
  const syncedMs = Date.UTC(2026, 10, 21, 3, 4, 5, 678);
  const capturedUs = payloads.map((_, index) => requested[index] ?? received[index] ?? syncedMs * 1000);
  await ensureReadingPartitions(
    db,
    capturedUs.map((us) => monthIndexOf(Math.floor(us / 1000))),
  );
  const rows = encodeReadingRows({
    organizationId,
    sourceId: '9007199254740991',
    syncedMs,
    capturedUs,
    timeRequestedUs: readings.timeRequestedUs,
    timeReceivedUs: readings.timeReceivedUs,
    json: readings.json,
    payloadStarts: readings.payloadStarts,
    payloadEnds: readings.payloadEnds,
  });
  const client = await db.connect();
  try {
    await pipeline(
      Readable.from([Buffer.concat([binaryCopyHeader, rows, binaryCopyTrailer])]),
      client.query(copyFrom(`COPY readings (${readingCopyColumns}) FROM STDIN (FORMAT binary)`)),
    );
  } finally {
    client.release();
  }
  const micros = (column: string) => `(extract(epoch FROM ${column}) * 1000000)::bigint::text AS ${column}`;
  const stored = await db.query(
    `SELECT organization_id, source_id::text, size_bytes, data, ${micros('captured_at')}, ${micros('time_requested')},
            ${micros('time_received')}, ${micros('synced_at')}
     FROM readings WHERE organization_id = $1 ORDER BY id`,
    [organizationId],
  );
  assert.equal(stored.rowCount, payloads.length);
  stored.rows.forEach((row, index) => {
    const payload = payloads[index] as object;
    assert.equal(row.organization_id, organizationId);
    assert.equal(row.source_id, '9007199254740991');
    assert.deepEqual(row.data, payload);
    assert.equal(row.size_bytes, Buffer.byteLength(JSON.stringify(payload)));
    assert.equal(row.captured_at, String(capturedUs[index]));
    assert.equal(row.time_requested, requested[index] === null ? null : String(requested[index]));
    assert.equal(row.time_received, received[index] === null ? null : String(received[index]));
    assert.equal(row.synced_at, String(syncedMs * 1000));
  });
});

test('a payload jsonb refuses fails the COPY with the same error code as text input', async () => {
  const readings = tabularReadingsFromContents([
    { mimeType: '', boundingBoxes: [], data: { kind: 'struct', value: { bad: 'nul \u0000 here' } } },
  ]);
  const rows = encodeReadingRows({
    organizationId,
    sourceId: '1',
    syncedMs: Date.now(),
    capturedUs: [Date.now() * 1000],
    timeRequestedUs: [null],
    timeReceivedUs: [null],
    json: readings.json,
    payloadStarts: readings.payloadStarts,
    payloadEnds: readings.payloadEnds,
  });
  await ensureReadingPartitions(db, [monthIndexOf(Date.now())]);
  const client = await db.connect();
  try {
    await assert.rejects(
      pipeline(
        Readable.from([Buffer.concat([binaryCopyHeader, rows, binaryCopyTrailer])]),
        client.query(copyFrom(`COPY readings (${readingCopyColumns}) FROM STDIN (FORMAT binary)`)),
      ),
      (error: { code?: string }) => error.code === '22P05',
    );
  } finally {
    client.release();
  }
});
