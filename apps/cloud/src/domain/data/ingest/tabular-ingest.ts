import { createHash } from 'node:crypto';
import type { Database } from '../../../infra/postgres/database.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newObjectId } from '../../shared/ids.ts';
import { binaryDataIdOf, fileIdOf } from './binary-data-id.ts';
import { type CaptureSource, captureSourceHash, findOrCreateCaptureSource } from './capture-sources.ts';
import { captureInstantUs, microsToIso, microsToMs } from './capture-time.ts';
import { ensureReadingPartitions, forgetReadingPartitions, monthIndexOf } from './reading-partitions.ts';
import { resolveUploadPart } from './upload-part.ts';
import { findReceipt } from './upload-receipts.ts';
import type { SensorContentInput, UploadMetadataInput, UploadResult } from './upload-types.ts';

/** Largest single reading (its JSON), as documented for the reference service. */
export const MAX_READING_BYTES = 4 * 1024 * 1024;

export interface TabularIngestDeps {
  db: Database;
  clock: Clock;
}

/**
 * Stores each struct SensorData as one reading of the part. The hot path: all readings of a request go
 * in with ONE statement that also writes the upload receipt (atomic; no per-row round trips), with the
 * rows passed as one JSON array decoded by `jsonb_to_recordset`. A retried identical upload (same part,
 * metadata, timestamps and payloads) stores nothing and returns the first upload's IDs.
 */
export async function ingestTabularReadings(
  deps: TabularIngestDeps,
  principal: Principal,
  metadata: UploadMetadataInput,
  contents: readonly SensorContentInput[],
): Promise<UploadResult> {
  const part = await resolveUploadPart(deps, principal, metadata.partId);
  if (contents.length === 0) throw invalidArgument('sensor_contents', 'must contain at least one reading');
  const nowMs = deps.clock.nowMs();
  const months = new Set<number>();
  const rows: string[] = new Array(contents.length);
  for (let index = 0; index < contents.length; index++) {
    const content = contents[index] as SensorContentInput;
    const field = `sensor_contents[${index}]`;
    if (content.data.kind !== 'struct') {
      throw invalidArgument(
        field,
        `a tabular upload needs struct data in every entry (got ${content.data.kind === 'binary' ? 'binary data' : 'no data'})`,
      );
    }
    const json = JSON.stringify(content.data.value);
    const sizeBytes = Buffer.byteLength(json);
    if (sizeBytes > MAX_READING_BYTES) {
      throw invalidArgument(
        field,
        `reading is ${sizeBytes} bytes; a single reading may be at most ${MAX_READING_BYTES} bytes (4 MiB)`,
      );
    }
    const captured = captureInstantUs(content, nowMs, `${field}.metadata`);
    months.add(monthIndexOf(microsToMs(captured)));
    const requested =
      content.timeRequestedUs === undefined ? 'null' : `"${microsToIso(content.timeRequestedUs)}"`;
    const received =
      content.timeReceivedUs === undefined ? 'null' : `"${microsToIso(content.timeReceivedUs)}"`;
    rows[index] =
      `{"tq":${requested},"tr":${received},"tc":"${microsToIso(captured)}","sz":${sizeBytes},"d":${json}}`;
  }
  const source: CaptureSource = {
    organizationId: part.organizationId,
    locationId: part.locationId,
    robotId: part.robotId,
    partId: part.partId,
    componentType: metadata.componentType,
    componentName: metadata.componentName,
    methodName: metadata.methodName,
    methodParameters: metadata.methodParameters,
    tags: metadata.tags,
  };
  const sourceHash = captureSourceHash(source);
  const batchJson = `[${rows.join(',')}]`;
  const idempotencyKey = createHash('sha256')
    .update('tabular\0')
    .update(sourceHash)
    .update('\0')
    .update(batchJson)
    .digest();
  let sourceId: string;
  try {
    sourceId = await findOrCreateCaptureSource(deps.db, source, sourceHash);
  } catch (error) {
    throw mapJsonError(error, 'metadata.method_parameters');
  }
  await ensureReadingPartitions(deps.db, months);
  const binaryDataId = binaryDataIdOf(part.organizationId, part.locationId, newObjectId(nowMs));
  const params = [part.organizationId, idempotencyKey, binaryDataId, sourceId, new Date(nowMs), batchJson];
  let storedId: string | null | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await deps.db.query<{ file_id: string | null }>(insertReadingsSql, params);
      storedId = result.rows[0]?.file_id;
      break;
    } catch (error) {
      // 23514: no partition for a row (one was dropped behind this process's cache): recreate once.
      if ((error as { code?: string }).code === '23514' && attempt === 1) {
        forgetReadingPartitions(deps.db);
        await ensureReadingPartitions(deps.db, months);
        continue;
      }
      throw mapJsonError(error, 'sensor_contents');
    }
  }
  if (storedId) return { fileId: fileIdOf(storedId), binaryDataId: storedId, duplicate: false };
  const existing = await findReceipt(deps.db, part.organizationId, idempotencyKey);
  if (!existing) throw new DomainError('Aborted', 'a concurrent identical upload failed; retry the upload');
  return { fileId: fileIdOf(existing), binaryDataId: existing, duplicate: true };
}

// One statement = one transaction: the receipt row and every reading, or nothing.
const insertReadingsSql = `
WITH receipt AS (
  INSERT INTO upload_receipts (organization_id, idempotency_key, file_id)
  VALUES ($1, $2, $3)
  ON CONFLICT DO NOTHING
  RETURNING file_id
), inserted AS (
  INSERT INTO readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data)
  SELECT $1, $4, x.tc, x.tq, x.tr, $5, x.sz, x.d
  FROM jsonb_to_recordset($6::jsonb) AS x(tq timestamptz, tr timestamptz, tc timestamptz, sz integer, d jsonb)
  WHERE EXISTS (SELECT 1 FROM receipt)
  RETURNING 1
)
SELECT (SELECT file_id FROM receipt) AS file_id, (SELECT count(*) FROM inserted) AS inserted`;

/** Postgres jsonb refuses `\u0000` in strings (22P05); that is the client's data, not our bug. */
export function mapJsonError(error: unknown, field: string): unknown {
  const code = (error as { code?: string }).code;
  if (code === '22P05' || code === '22P02') {
    return new DomainError(
      'InvalidArgument',
      `${field}: contains a value JSON storage cannot hold (strings must not contain the NUL character \\u0000)`,
      { cause: error },
    );
  }
  return error;
}
