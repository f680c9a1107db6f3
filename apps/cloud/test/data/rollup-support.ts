import { randomUUID } from 'node:crypto';
import { serialize } from 'bson';
import { ensureReadingPartitions, monthIndexOf } from '../../src/domain/data/ingest/reading-partitions.ts';
import { compilePipeline, readingsSource } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import { rollupPrefixCompiler } from '../../src/domain/data/mql/rollups/rollup-union.ts';
import { createDatabase, type Database } from '../../src/infra/postgres/database.ts';
import { migrate } from '../../src/infra/postgres/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/test-database.ts';
import { runDocumentQuery } from './mql-support.ts';

/**
 * Helpers for the reading-rollup tests: readings written into the real tables (so the mark triggers of
 * migration 0023 fire), pipelines compiled with and without the rollup prefix, and run as the query role of
 * one organization (the views of migrations 0006/0023), the way TabularDataByMQL runs them.
 */

export interface RollupSource {
  id: string;
  componentName: string;
  methodName: string;
  tags: string[];
}

export interface RollupReading {
  source: number;
  /** time_received; null: no time_received. */
  receivedMs: number | null;
  /** time_requested; null: none (captured_at is time_received then). */
  requestedMs: number | null;
  data: Record<string, unknown>;
}

export const sourceShapes = [
  { componentName: 'sensor-1', methodName: 'Readings', tags: ['a'] },
  { componentName: 'sensor-2', methodName: 'Readings', tags: [] },
  { componentName: 'motor-1', methodName: 'Position', tags: ['a', 'b'] },
  // Same component name, other tags: two sources, one group by component_name.
  { componentName: 'sensor-1', methodName: 'Readings', tags: ['c'] },
];

export async function createRollupSources(db: Database, organizationId: string): Promise<RollupSource[]> {
  const sources: RollupSource[] = [];
  for (const shape of sourceShapes) {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO capture_sources (organization_id, location_id, robot_id, part_id, component_type,
         component_name, method_name, tags, source_hash)
       VALUES ($1, 'loc', gen_random_uuid(), gen_random_uuid(), 'rdk:component:sensor', $2, $3, $4,
         sha256(convert_to($5, 'UTF8'))) RETURNING id`,
      [organizationId, shape.componentName, shape.methodName, shape.tags, randomUUID()],
    );
    sources.push({ id: rows[0]?.id as string, ...shape });
  }
  return sources;
}

/** One INSERT statement (one set of marks), as an upload's group commit would. Returns the reading ids. */
export async function insertReadings(
  db: Pick<Database, 'query'>,
  organizationId: string,
  sources: readonly RollupSource[],
  readings: readonly RollupReading[],
): Promise<string[]> {
  if (readings.length === 0) return [];
  const capturedMs = readings.map((reading) => reading.requestedMs ?? reading.receivedMs ?? 0);
  await ensureReadingPartitions(db, new Set(capturedMs.map(monthIndexOf)));
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at,
       size_bytes, data)
     SELECT $1, s, c, q, r, c, 10, d
       FROM unnest($2::bigint[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[], $6::jsonb[]) AS u(s, c, q, r, d)
     RETURNING id::text`,
    [
      organizationId,
      readings.map((reading) => (sources[reading.source] as RollupSource).id),
      capturedMs.map((ms) => new Date(ms)),
      readings.map((reading) => (reading.requestedMs === null ? null : new Date(reading.requestedMs))),
      readings.map((reading) => (reading.receivedMs === null ? null : new Date(reading.receivedMs))),
      readings.map((reading) => JSON.stringify(reading.data)),
    ],
  );
  return rows.map((row) => row.id);
}

/** The document a reading is (wire-protocol §3.2 fields the tests use), for mingo. */
export function readingDocument(
  reading: RollupReading,
  sources: readonly RollupSource[],
  organizationId: string,
  index: number,
): Record<string, unknown> {
  const source = sources[reading.source] as RollupSource;
  return {
    _id: index,
    organization_id: organizationId,
    component_name: source.componentName,
    method_name: source.methodName,
    tags: source.tags,
    ...(reading.receivedMs === null
      ? { time_received: null }
      : { time_received: new Date(reading.receivedMs) }),
    ...(reading.requestedMs === null
      ? { time_requested: null }
      : { time_requested: new Date(reading.requestedMs) }),
    data: reading.data,
  };
}

/** `rollups`: with the rollup prefix; `maxProbedBuckets` 0 reads raw buckets with one scan of the range. */
export function compileReadings(
  pipeline: readonly object[],
  rollups: boolean,
  maxProbedBuckets?: number,
): string {
  const stages = pipeline.map((stage, index) => decodeStage(serialize(stage), index));
  const rollupPrefix = rollupPrefixCompiler(maxProbedBuckets === undefined ? {} : { maxProbedBuckets });
  const source = rollups ? { ...readingsSource(), rollupPrefix } : readingsSource();
  return compilePipeline(stages, source).sql;
}

/** Runs compiled SQL as the organization's query role, in one READ ONLY transaction. */
export async function runAsOrganization(
  db: Database,
  organizationId: string,
  sql: string,
): Promise<unknown[]> {
  return runDocumentQuery(db, sql, async (client) => {
    await client.query(
      `SELECT set_config('mcloud.query_token', mcloud_private.organization_token($1), true)`,
      [organizationId],
    );
    await client.query('SET LOCAL ROLE mcloud_query');
  });
}

/** A migrated test database with two organizations and their capture sources (sourceShapes). */
export interface RollupTestContext {
  database: TestDatabase;
  db: Database;
  org: string;
  other: string;
  sources: RollupSource[];
  otherSources: RollupSource[];
}

export async function createRollupTestContext(): Promise<RollupTestContext> {
  const database = await createTestDatabase();
  const db = createDatabase(database.url, 4);
  await migrate(db);
  const org = randomUUID();
  const other = randomUUID();
  return {
    database,
    db,
    org,
    other,
    sources: await createRollupSources(db, org),
    otherSources: await createRollupSources(db, other),
  };
}

export async function dropRollupTestContext(context: RollupTestContext): Promise<void> {
  await context.db.end();
  await context.database.drop();
}

export async function rollupCounts(db: Database): Promise<{ marks: number; buckets: number; paths: number }> {
  const { rows } = await db.query<{ marks: number; buckets: number; paths: number }>(
    `SELECT (SELECT count(*)::int FROM reading_rollup_marks) AS marks,
            (SELECT count(*)::int FROM reading_rollup_buckets) AS buckets,
            (SELECT COALESCE(sum((SELECT count(*) FROM jsonb_object_keys(paths))), 0)::int FROM reading_rollup_buckets) AS paths`,
  );
  return rows[0] as { marks: number; buckets: number; paths: number };
}
