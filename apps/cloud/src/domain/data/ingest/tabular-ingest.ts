import { createHash } from 'node:crypto';
import type { Database } from '../../../infra/postgres/database.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newObjectId } from '../../shared/ids.ts';
import { binaryDataIdOf, fileIdOf } from './binary-data-id.ts';
import { type CaptureSource, captureSourceHash, findOrCreateCaptureSource } from './capture-sources.ts';
import { captureInstantOfReadingUs } from './capture-time.ts';
import { readingBatchWriterFor } from './reading-batch-writer.ts';
import { encodeReadingRows } from './reading-copy-rows.ts';
import {
  ensureReadingPartitions,
  forgetReadingPartitions,
  monthIndexOf,
  monthStartMs,
} from './reading-partitions.ts';
import { isTabularReadings, type TabularReadings, tabularReadingsFromContents } from './tabular-readings.ts';
import { prepareUploadObservers, type UploadObserver } from './upload-observer.ts';
import { resolveUploadPart } from './upload-part.ts';
import { findReceipt } from './upload-receipts.ts';
import type { SensorContentInput, UploadMetadataInput, UploadResult } from './upload-types.ts';

/** Largest single reading (its JSON), as documented for the reference service. */
export const MAX_READING_BYTES = 4 * 1024 * 1024;

export interface TabularIngestDeps {
  db: Database;
  clock: Clock;
  /** Told about every stored upload inside its transaction (triggers). */
  uploadObservers?: readonly UploadObserver[];
}

/**
 * Stores each struct SensorData as one reading of the part. The hot path: all readings of a request go
 * in with binary COPY inside the transaction that also writes the upload receipt (atomic; no per-row
 * round trips), and concurrent uploads share transactions (see reading-batch-writer.ts). A retried
 * identical upload (same part, metadata, timestamps and payloads) stores nothing and returns the first
 * upload's IDs.
 */
export async function ingestTabularReadings(
  deps: TabularIngestDeps,
  principal: Principal,
  metadata: UploadMetadataInput,
  input: TabularReadings | readonly SensorContentInput[],
): Promise<UploadResult> {
  const part = await resolveUploadPart(deps, principal, metadata.partId);
  if ((isTabularReadings(input) ? input.count : input.length) === 0) {
    throw invalidArgument('sensor_contents', 'must contain at least one reading');
  }
  const readings = isTabularReadings(input) ? input : tabularReadingsFromContents(input);
  const nowMs = deps.clock.nowMs();
  const months = new Set<number>();
  const { count, timeRequestedUs, timeReceivedUs, payloadStarts, payloadEnds } = readings;
  const capturedUs: number[] = new Array(count);
  let capturedUntilUs = Number.NEGATIVE_INFINITY;
  let lastMonthStartUs = 0;
  let lastMonthEndUs = -1;
  for (let index = 0; index < count; index++) {
    const sizeBytes = (payloadEnds[index] as number) - (payloadStarts[index] as number);
    if (sizeBytes > MAX_READING_BYTES) {
      throw invalidArgument(
        `sensor_contents[${index}]`,
        `reading is ${sizeBytes} bytes; a single reading may be at most ${MAX_READING_BYTES} bytes (4 MiB)`,
      );
    }
    const captured = captureInstantOfReadingUs(
      timeRequestedUs[index] as number | null,
      timeReceivedUs[index] as number | null,
      nowMs,
      `sensor_contents[${index}].metadata`,
    );
    capturedUs[index] = captured;
    if (captured > capturedUntilUs) capturedUntilUs = captured;
    // Readings of one upload mostly share a month: only a change of month costs a Date.
    if (captured < lastMonthStartUs || captured >= lastMonthEndUs) {
      const monthIndex = monthIndexOf(Math.floor(captured / 1000));
      months.add(monthIndex);
      lastMonthStartUs = monthStartMs(monthIndex) * 1000;
      lastMonthEndUs = monthStartMs(monthIndex + 1) * 1000;
    }
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
  const idempotencyKey = createHash('sha256')
    .update('tabular\0')
    .update(sourceHash)
    .update(`\0${timeRequestedUs.join(',')}\0${timeReceivedUs.join(',')}\0`)
    .update(readings.json)
    .digest();
  let sourceId: string;
  try {
    sourceId = await findOrCreateCaptureSource(deps.db, source, sourceHash);
  } catch (error) {
    throw mapJsonError(error, 'metadata.method_parameters');
  }
  await ensureReadingPartitions(deps.db, months);
  const binaryDataId = binaryDataIdOf(part.organizationId, part.locationId, newObjectId(nowMs));
  const copyRows = encodeReadingRows({
    organizationId: part.organizationId,
    sourceId,
    syncedMs: nowMs,
    capturedUs,
    timeRequestedUs,
    timeReceivedUs,
    json: readings.json,
    payloadStarts,
    payloadEnds,
  });
  const parsed: unknown[] = [];
  const decoder = new TextDecoder();
  const beforeCommit = await prepareUploadObservers(deps.uploadObservers, {
    part,
    metadata,
    syncedAtMs: nowMs,
    fileId: undefined,
    itemCount: count,
    timesAt: (index) => ({
      requestedUs: timeRequestedUs[index] ?? null,
      receivedUs: timeReceivedUs[index] ?? null,
    }),
    payloadAt: (index) => {
      if (!(index in parsed)) {
        const payload = readings.json.subarray(payloadStarts[index], payloadEnds[index]);
        parsed[index] = JSON.parse(decoder.decode(payload));
      }
      return parsed[index];
    },
  });
  let storedId: string | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const stored = await readingBatchWriterFor(deps.db).write({
        organizationId: part.organizationId,
        idempotencyKey,
        binaryDataId,
        capturedUntilUs,
        copyRows,
        rowCount: count,
        beforeCommit,
        partId: part.partId,
      });
      storedId = stored ? binaryDataId : undefined;
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
