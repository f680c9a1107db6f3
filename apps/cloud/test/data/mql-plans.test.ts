import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { serialize } from 'bson';
import { compilePipeline } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import type { Database } from '../../src/infra/postgres/database.ts';
import { createMigratedDatabase, type MigratedDatabase } from '../support/test-database.ts';
import { docsSource, loadDocuments, type TestDocument } from './mql-support.ts';

/**
 * The shapes of compiled SQL that performance depends on (bench/query-mql.ts measures them): a `$match` on
 * typed columns can use a B-tree index, and a `$group` over field paths can run with parallel workers.
 */

let database: MigratedDatabase;
let db: Database;

before(async () => {
  database = await createMigratedDatabase(2);
  db = database.db;
  const base = Date.parse('2025-03-10T00:00:00Z');
  const documents: TestDocument[] = Array.from({ length: 2000 }, (_, i) => ({
    _id: `r${i}`,
    component_name: `sensor-${i % 4}`,
    method_name: 'Readings',
    time_received: new Date(base + i * 60_000),
    tags: [],
    data: { readings: { temperature: 20 + (i % 10), humidity: 40 + (i % 7) } },
  }));
  await loadDocuments(db, documents);
  await db.query('CREATE INDEX mql_docs_component_time ON mql_docs (component_name, time_received)');
  await db.query('ANALYZE mql_docs');
});

after(() => database.close());

async function planOf(pipeline: object[], settings: string[]): Promise<string> {
  const { sql } = compilePipeline(
    pipeline.map((stage, index) => decodeStage(serialize(stage), index)),
    docsSource,
  );
  const client = await db.connect();
  try {
    await client.query('BEGIN READ ONLY');
    await client.query('SET LOCAL search_path = sensordata, public, pg_catalog');
    for (const setting of settings) await client.query(`SET LOCAL ${setting}`);
    const result = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
    return result.rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

const dashboard = [
  {
    $match: {
      component_name: { $in: ['sensor-2'] },
      time_received: { $gte: new Date('2025-03-10T05:00:00Z'), $lt: new Date('2025-03-10T06:00:00Z') },
    },
  },
  {
    $group: {
      _id: '$component_name',
      avg: { $avg: '$data.readings.temperature' },
      max: { $max: '$data.readings.humidity' },
      n: { $sum: 1 },
    },
  },
];

test('a $match on typed columns is a bare comparison a B-tree index serves', async () => {
  const plan = await planOf(dashboard, ['enable_seqscan = off']);
  assert.match(
    plan,
    /Index (Only )?Scan using mql_docs_component_time|Bitmap Index Scan on mql_docs_component_time/,
  );
  assert.match(plan, /Index Cond: .*time_received >=/);
});

test('a $group over field paths runs with parallel workers (partial aggregation)', async () => {
  const plan = await planOf(dashboard.slice(1), [
    'parallel_setup_cost = 0',
    'parallel_tuple_cost = 0',
    'min_parallel_table_scan_size = 0',
    'max_parallel_workers_per_gather = 2',
  ]);
  assert.match(plan, /Gather/);
  assert.match(plan, /Partial (Hash|Group)Aggregate/);
});
