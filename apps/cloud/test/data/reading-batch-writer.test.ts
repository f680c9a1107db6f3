import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  createReadingBatchWriter,
  type ReadingBatch,
} from '../../src/domain/data/ingest/reading-batch-writer.ts';
import { encodeReadingRows } from '../../src/domain/data/ingest/reading-copy-rows.ts';
import { ensureReadingPartitions, monthIndexOf } from '../../src/domain/data/ingest/reading-partitions.ts';
import { tabularReadingsFromContents } from '../../src/domain/data/ingest/tabular-readings.ts';
import { createDatabase, type Database } from '../../src/infra/postgres/database.ts';
import { migrate } from '../../src/infra/postgres/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/test-database.ts';

let testDb: TestDatabase;
let db: Database;
const organizationId = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
const nowMs = Date.UTC(2026, 0, 15, 12);

before(async () => {
  testDb = await createTestDatabase();
  db = createDatabase(testDb.url);
  await migrate(db);
  await ensureReadingPartitions(db, [monthIndexOf(nowMs)]);
});
after(async () => {
  await db?.end();
  await testDb?.drop();
});

function batch(sourceId: string, rowCount: number, partId = 'part-1'): ReadingBatch {
  const readings = tabularReadingsFromContents(
    Array.from({ length: rowCount }, (_, index) => ({
      mimeType: '',
      boundingBoxes: [],
      timeRequestedUs: BigInt(nowMs * 1000 + index),
      data: { kind: 'struct' as const, value: { index } },
    })),
  );
  return {
    organizationId,
    idempotencyKey: randomBytes(32),
    binaryDataId: `${organizationId}/loc/${randomBytes(12).toString('hex')}`,
    capturedUntilUs: nowMs * 1000 + rowCount - 1,
    copyRows: encodeReadingRows({
      organizationId,
      sourceId,
      syncedMs: nowMs,
      capturedUs: readings.timeRequestedUs as number[],
      timeRequestedUs: readings.timeRequestedUs,
      timeReceivedUs: readings.timeReceivedUs,
      json: readings.json,
      payloadStarts: readings.payloadStarts,
      payloadEnds: readings.payloadEnds,
    }),
    rowCount,
    partId,
  };
}

async function transactionsOf(sourceId: string): Promise<{ rows: number; transactions: number }> {
  const result = await db.query<{ rows: number; transactions: number }>(
    'SELECT count(*)::int AS rows, count(DISTINCT xmin::text)::int AS transactions FROM readings WHERE source_id = $1',
    [sourceId],
  );
  return result.rows[0] as { rows: number; transactions: number };
}

test('while a transaction commits, small uploads wait and then share ONE transaction', async () => {
  const writer = createReadingBatchWriter(db);
  const stored = await Promise.all([
    writer.write(batch('101', 10)), // the writer is idle: commits at once
    ...Array.from({ length: 12 }, () => writer.write(batch('101', 10))), // 120 rows: wait, then one group
  ]);
  assert.ok(stored.every(Boolean));
  assert.deepEqual(await transactionsOf('101'), { rows: 130, transactions: 2 });
});

test('a group runs its commit steps in part order, so concurrent groups cannot lock part rows crosswise', async () => {
  const writer = createReadingBatchWriter(db);
  const steps: string[] = [];
  const withStep = (partId: string): ReadingBatch => ({
    ...batch('103', 5, partId),
    beforeCommit: async () => {
      steps.push(partId);
    },
  });
  const stored = await Promise.all([
    writer.write(batch('103', 5, 'part-0')), // commits alone
    ...['part-c', 'part-a', 'part-b', 'part-a'].map((partId) => writer.write(withStep(partId))),
  ]);
  assert.ok(stored.every(Boolean));
  assert.deepEqual((await transactionsOf('103')).transactions, 2, 'the four shared one transaction');
  assert.deepEqual(steps, ['part-a', 'part-a', 'part-b', 'part-c']);
});

test('a backlog of 1,000 rows or more starts a second transaction alongside the first', async () => {
  const writer = createReadingBatchWriter(db);
  const first = writer.write(batch('102', 10));
  const backlog = Array.from({ length: 3 }, () => writer.write(batch('102', 400)));
  // Arrives after the second transaction has taken the backlog: waits for the next free slot.
  const late = writer.write(batch('102', 5));
  assert.ok((await Promise.all([first, ...backlog, late])).every(Boolean));
  const xmins = await db.query<{ xmin: string; rows: number }>(
    'SELECT xmin::text, count(*)::int AS rows FROM readings WHERE source_id = $1 GROUP BY 1 ORDER BY 2',
    ['102'],
  );
  assert.deepEqual(
    xmins.rows.map((row) => row.rows),
    [5, 10, 1200],
  );
});
