import type { Queryable } from '../../../infra/postgres/database.ts';
import { preparedQuery } from '../../../infra/postgres/prepared-query.ts';
import type { SortOrder } from './binary-data-repository.ts';
import type { CaptureMetadata, JsonRecord, TabularReading } from './capture-metadata.ts';
import { type CaptureMetadataRow, captureMetadataFromRow, microsOrUndefined } from './capture-metadata.ts';
import type { EpochMicros } from './data-filter.ts';
import type { PageCursor } from './page-cursor.ts';
import { allOf, createSqlParams, microsOfSql, type SqlParams, timestampFromMicrosSql } from './sql-params.ts';

export interface CaptureSource extends CaptureMetadata {
  id: string;
}

/** IDs of the capture sources matching `conditions` (alias `s`). */
export async function selectSourceIds(
  db: Queryable,
  conditions: string[],
  params: SqlParams,
): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    preparedQuery(`SELECT s.id::text AS id FROM capture_sources s WHERE ${allOf(conditions)}`, params.values),
  );
  return result.rows.map((row) => row.id);
}

interface SourceRow extends CaptureMetadataRow {
  id: string;
}

// Columns of a capture source with its machine and part names (aliases `s`, `rb`, `pt`).
const sourceColumns = `s.organization_id, s.location_id, s.robot_id, s.part_id, rb.name AS robot_name,
  pt.name AS part_name, s.component_type, s.component_name, s.method_name, s.method_parameters, s.tags`;
const sourceJoins = `capture_sources s
  LEFT JOIN robots rb ON rb.id = s.robot_id
  LEFT JOIN robot_parts pt ON pt.id = s.part_id`;

function sourceFromRow(row: SourceRow): CaptureSource {
  return { id: row.id, ...captureMetadataFromRow(row, '') };
}

/** Capture sources with their machine and part names, keyed by source ID. */
export async function selectSources(
  db: Queryable,
  ids: readonly string[],
): Promise<Map<string, CaptureSource>> {
  if (ids.length === 0) return new Map();
  const result = await db.query<SourceRow>(
    preparedQuery(
      `SELECT s.id::text AS id, ${sourceColumns} FROM ${sourceJoins} WHERE s.id = ANY($1::bigint[])`,
      [ids],
    ),
  );
  return new Map(result.rows.map((row) => [row.id, sourceFromRow(row)]));
}

/**
 * Which readings a tabular query walks: all readings of some organizations (index
 * `readings_organization_time`), or those of some capture sources (index `readings_source_time`).
 */
export type ReadingsKey =
  | { kind: 'organizations'; organizationIds: readonly string[]; sourceIds?: readonly string[] }
  | { kind: 'sources'; sourceIds: readonly string[] };

/**
 * A page key resolved inside the page's own statement (one round trip): the capture sources matching
 * `conditions` (alias `s`, compiled into the statement's parameters), each probed like `sources` — as
 * long as at most `maxSources` match; with more, the statement returns no rows and the caller resolves
 * the sources itself to walk the organization index instead.
 */
export interface MatchingSourcesKey {
  kind: 'matching-sources';
  conditions: (params: SqlParams) => string[];
  maxSources: number;
  /** The organizations the sources belong to (for the index walk when more than `maxSources` match). */
  organizationIds: readonly string[];
}

export interface ReadingsWindow {
  start?: EpochMicros;
  end?: EpochMicros;
}

interface ReadingRow {
  id: string;
  source_id: string;
  captured_us: string;
  time_requested_us: string | null;
  time_received_us: string | null;
  synced_us: string;
  size_bytes: number;
  data: JsonRecord;
}

const readingColumns = `r.id::text AS id, r.source_id::text AS source_id, ${microsOfSql('r.captured_at')} AS captured_us,
  ${microsOfSql('r.time_requested')} AS time_requested_us, ${microsOfSql('r.time_received')} AS time_received_us,
  ${microsOfSql('r.synced_at')} AS synced_us, r.size_bytes, r.data`;

function readingFromRow(row: ReadingRow): TabularReading {
  return {
    id: row.id,
    sourceId: row.source_id,
    capturedAt: BigInt(row.captured_us),
    timeRequested: microsOrUndefined(row.time_requested_us),
    timeReceived: microsOrUndefined(row.time_received_us),
    syncedAt: BigInt(row.synced_us),
    sizeBytes: row.size_bytes,
    data: row.data,
  };
}

function windowConditions(window: ReadingsWindow, params: SqlParams): string[] {
  const conditions: string[] = [];
  if (window.start !== undefined)
    conditions.push(`r.captured_at >= ${timestampFromMicrosSql(params.add(window.start.toString()))}`);
  if (window.end !== undefined)
    conditions.push(`r.captured_at <= ${timestampFromMicrosSql(params.add(window.end.toString()))}`);
  return conditions;
}

export interface ReadingsPageQuery<Key = ReadingsKey> {
  key: Key;
  window: ReadingsWindow;
  order: SortOrder;
  after?: PageCursor;
  limit: number;
}

/**
 * One keyset page of readings, newest or oldest first. Each key (an organization or a capture source) is probed through its index with the limit pushed down
 * (a LATERAL per key, so each probe is an ordered index scan that stops after `limit` rows), then the
 * per-key heads are merged.
 */
export async function selectReadingsPage(
  db: Queryable,
  query: ReadingsPageQuery<ReadingsKey | MatchingSourcesKey>,
): Promise<TabularReading[]> {
  const params = createSqlParams();
  const direction = query.order === 'ascending' ? 'ASC' : 'DESC';
  const conditions = windowConditions(query.window, params);
  if (query.after) {
    const comparison = query.order === 'ascending' ? '>' : '<';
    conditions.push(
      `(r.captured_at, r.id) ${comparison} (${timestampFromMicrosSql(params.add(query.after.capturedAt.toString()))}, ${params.add(query.after.id)}::bigint)`,
    );
  }
  const { key } = query;
  let keyList: string;
  let keyColumn: string;
  if (key.kind === 'organizations') {
    keyList = `unnest(${params.add(key.organizationIds)}::uuid[])`;
    keyColumn = 'r.organization_id';
    if (key.sourceIds) conditions.push(`r.source_id = ANY(${params.add(key.sourceIds)}::bigint[])`);
  } else if (key.kind === 'sources') {
    keyList = `unnest(${params.add(key.sourceIds)}::bigint[])`;
    keyColumn = 'r.source_id';
  } else {
    keyList = `(SELECT m.id FROM (SELECT s.id, count(*) OVER () AS matches FROM capture_sources s
                 WHERE ${allOf(key.conditions(params))}) m WHERE m.matches <= ${Number(key.maxSources)})`;
    keyColumn = 'r.source_id';
  }
  const limit = params.add(query.limit);
  const order = `ORDER BY r.captured_at ${direction}, r.id ${direction}`;
  const keyCount =
    key.kind === 'organizations'
      ? key.organizationIds.length
      : key.kind === 'sources'
        ? key.sourceIds.length
        : undefined;
  const sql =
    keyCount === 1
      ? `SELECT ${readingColumns} FROM readings r
          WHERE ${keyColumn} = (SELECT k FROM ${keyList} AS k) AND ${allOf(conditions)} ${order} LIMIT ${limit}`
      : `SELECT r.* FROM ${keyList} AS k(key) CROSS JOIN LATERAL (
           SELECT ${readingColumns}, r.captured_at AS sort_time, r.id AS sort_id FROM readings r
            WHERE ${keyColumn} = k.key AND ${allOf(conditions)} ${order} LIMIT ${limit}) r
          ORDER BY r.sort_time ${direction}, r.sort_id ${direction} LIMIT ${limit}`;
  const result = await db.query<ReadingRow>(preparedQuery(sql, params.values));
  return result.rows.map(readingFromRow);
}

export async function countReadings(
  db: Queryable,
  key: ReadingsKey,
  window: ReadingsWindow,
): Promise<{ count: number; sizeBytes: number }> {
  const params = createSqlParams();
  const conditions = windowConditions(window, params);
  if (key.kind === 'organizations') {
    conditions.push(`r.organization_id = ANY(${params.add(key.organizationIds)}::uuid[])`);
    if (key.sourceIds) conditions.push(`r.source_id = ANY(${params.add(key.sourceIds)}::bigint[])`);
  } else {
    conditions.push(`r.source_id = ANY(${params.add(key.sourceIds)}::bigint[])`);
  }
  const result = await db.query<{ count: string; size: string }>(
    `SELECT count(*)::text AS count, coalesce(sum(r.size_bytes), 0)::text AS size FROM readings r WHERE ${allOf(conditions)}`,
    params.values,
  );
  const row = result.rows[0];
  return { count: Number(row?.count ?? 0), sizeBytes: Number(row?.size ?? 0) };
}
