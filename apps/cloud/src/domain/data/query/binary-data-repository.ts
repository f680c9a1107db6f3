import type { Queryable } from '../../../infra/postgres/database.ts';
import { fileIdOf } from '../ingest/binary-data-id.ts';
import type { BinaryItem, BoundingBox, CaptureMetadataRow, Classification } from './capture-metadata.ts';
import { captureMetadataFromRow, microsOrUndefined } from './capture-metadata.ts';
import type { PageCursor } from './page-cursor.ts';
import { allOf, microsOfSql, type SqlParams, timestampFromMicrosSql } from './sql-params.ts';

interface BinaryRow extends CaptureMetadataRow {
  id: string;
  file_name: string;
  file_ext: string;
  mime_type: string;
  dataset_ids: string[];
  captured_us: string;
  time_requested_us: string | null;
  time_received_us: string | null;
  size_bytes: string;
  blob_key: string;
  internal: boolean;
}

/** Selects items from `(<inner query>) b`, adding machine and part names. */
function selectItemsSql(inner: string, orderBy: string): string {
  return `SELECT b.id, b.organization_id, b.location_id, b.robot_id, b.part_id, r.name AS robot_name, p.name AS part_name,
                 b.component_type, b.component_name, b.method_name, b.method_parameters, b.file_name, b.file_ext,
                 b.mime_type, b.tags, b.dataset_ids, ${microsOfSql('b.captured_at')} AS captured_us,
                 ${microsOfSql('b.time_requested')} AS time_requested_us, ${microsOfSql('b.time_received')} AS time_received_us,
                 b.size_bytes, b.blob_key, b.internal
            FROM (${inner}) b
            LEFT JOIN robots r ON r.id = b.robot_id
            LEFT JOIN robot_parts p ON p.id = b.part_id
           ${orderBy}`;
}

function itemFromRow(row: BinaryRow): BinaryItem {
  return {
    fileId: fileIdOf(row.id),
    binaryDataId: row.id,
    metadata: captureMetadataFromRow(row, row.mime_type),
    fileName: row.file_name,
    fileExt: row.file_ext,
    datasetIds: row.dataset_ids,
    capturedAt: BigInt(row.captured_us),
    timeRequested: microsOrUndefined(row.time_requested_us),
    timeReceived: microsOrUndefined(row.time_received_us),
    sizeBytes: Number(row.size_bytes),
    blobKey: row.blob_key,
    internal: row.internal,
    boundingBoxes: [],
    classifications: [],
  };
}

export type SortOrder = 'ascending' | 'descending';

/** One keyset page over `binary_data` (index `binary_data_organization_time`), bounding boxes attached. */
export async function selectBinaryPage(
  db: Queryable,
  query: { conditions: string[]; params: SqlParams; order: SortOrder; after?: PageCursor; limit: number },
): Promise<BinaryItem[]> {
  const { params } = query;
  const conditions = [...query.conditions];
  const direction = query.order === 'ascending' ? 'ASC' : 'DESC';
  if (query.after) {
    const comparison = query.order === 'ascending' ? '>' : '<';
    conditions.push(
      `(b.captured_at, b.id) ${comparison} (${timestampFromMicrosSql(params.add(query.after.capturedAt.toString()))}, ${params.add(query.after.id)}::text)`,
    );
  }
  const order = `ORDER BY b.captured_at ${direction}, b.id ${direction}`;
  const inner = `SELECT * FROM binary_data b WHERE ${allOf(conditions)} ${order} LIMIT ${params.add(query.limit)}`;
  const result = await db.query<BinaryRow>(selectItemsSql(inner, order), params.values);
  return attachBoundingBoxes(db, result.rows.map(itemFromRow));
}

export async function countBinary(
  db: Queryable,
  conditions: string[],
  params: SqlParams,
): Promise<{ count: number; sizeBytes: number }> {
  const result = await db.query<{ count: string; size: string }>(
    `SELECT count(*)::text AS count, coalesce(sum(b.size_bytes), 0)::text AS size FROM binary_data b WHERE ${allOf(conditions)}`,
    params.values,
  );
  const row = result.rows[0];
  return { count: Number(row?.count ?? 0), sizeBytes: Number(row?.size ?? 0) };
}

/** Items by binary data ID inside the given (scope) conditions, in the order of `ids`. */
export async function selectBinaryByIds(
  db: Queryable,
  ids: readonly string[],
  conditions: string[],
  params: SqlParams,
): Promise<BinaryItem[]> {
  const inner = `SELECT * FROM binary_data b WHERE b.id = ANY(${params.add(ids)}::text[]) AND ${allOf(conditions)}`;
  const result = await db.query<BinaryRow>(selectItemsSql(inner, ''), params.values);
  const byId = new Map(result.rows.map((row) => [row.id, itemFromRow(row)]));
  const ordered = [...new Set(ids)].flatMap((id) => byId.get(id) ?? []);
  return attachBoundingBoxes(db, ordered);
}

/** Fills in each item's bounding boxes and classifications (one query for both). */
export async function attachBoundingBoxes(db: Queryable, items: BinaryItem[]): Promise<BinaryItem[]> {
  if (items.length === 0) return items;
  const result = await db.query<{
    kind: 'box' | 'class';
    id: string;
    binary_id: string;
    label: string;
    x_min: number | null;
    y_min: number | null;
    x_max: number | null;
    y_max: number | null;
    confidence: number | null;
  }>(
    `SELECT 'box' AS kind, id, binary_id, label, x_min, y_min, x_max, y_max, confidence, created_at
       FROM bounding_boxes WHERE binary_id = ANY($1::text[])
     UNION ALL
     SELECT 'class', id, binary_id, label, NULL, NULL, NULL, NULL, confidence, created_at
       FROM classifications WHERE binary_id = ANY($1::text[])
     ORDER BY created_at, id`,
    [items.map((item) => item.binaryDataId)],
  );
  const boxes = new Map<string, BoundingBox[]>();
  const classifications = new Map<string, Classification[]>();
  for (const row of result.rows) {
    const confidence = row.confidence === null ? {} : { confidence: row.confidence };
    if (row.kind === 'class') {
      pushTo(classifications, row.binary_id, { id: row.id, label: row.label, ...confidence });
      continue;
    }
    pushTo(boxes, row.binary_id, {
      id: row.id,
      label: row.label,
      xMin: row.x_min as number,
      yMin: row.y_min as number,
      xMax: row.x_max as number,
      yMax: row.y_max as number,
      ...confidence,
    });
  }
  for (const item of items) {
    item.boundingBoxes = boxes.get(item.binaryDataId) ?? [];
    item.classifications = classifications.get(item.binaryDataId) ?? [];
  }
  return items;
}

function pushTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
