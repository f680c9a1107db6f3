import { createHash } from 'node:crypto';
import type { Database } from '../../../infra/postgres/database.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newObjectId } from '../../shared/ids.ts';
import { binaryDataIdOf, fileIdOf } from './binary-data-id.ts';
import { type CaptureSource, captureSourceHash, findOrCreateCaptureSource } from './capture-sources.ts';
import { captureInstantUs, microsToIso } from './capture-time.ts';
import { readingBatchWriterFor } from './reading-batch-writer.ts';
import { ensureReadingPartitions, forgetReadingPartitions, monthIndexOf } from './reading-partitions.ts';
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
 * in with COPY inside the transaction that also writes the upload receipt (atomic; no per-row round
 * trips), and concurrent uploads share transactions (see reading-batch-writer.ts). A retried identical upload (same part,
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
  const count = contents.length;
  // Column arrays: capture times as epoch microseconds (exact in a double until year 2255; validated
  // above), sizes, and every payload's JSON joined into one JSON array the database parses once.
  const requestedUs: (number | null)[] = new Array(count);
  const receivedUs: (number | null)[] = new Array(count);
  const capturedUs: number[] = new Array(count);
  const sizes: number[] = new Array(count);
  const payloads: string[] = new Array(count);
  for (let index = 0; index < count; index++) {
    const content = contents[index] as SensorContentInput;
    const field = `sensor_contents[${index}]`;
    if (content.data.kind !== 'struct' && content.data.kind !== 'json') {
      throw invalidArgument(
        field,
        `a tabular upload needs struct data in every entry (got ${content.data.kind === 'binary' ? 'binary data' : 'no data'})`,
      );
    }
    const json = content.data.kind === 'json' ? content.data.text : JSON.stringify(content.data.value);
    const sizeBytes = Buffer.byteLength(json);
    if (sizeBytes > MAX_READING_BYTES) {
      throw invalidArgument(
        field,
        `reading is ${sizeBytes} bytes; a single reading may be at most ${MAX_READING_BYTES} bytes (4 MiB)`,
      );
    }
    const captured = Number(captureInstantUs(content, nowMs, `${field}.metadata`));
    months.add(monthIndexOf(Math.floor(captured / 1000)));
    requestedUs[index] = content.timeRequestedUs === undefined ? null : Number(content.timeRequestedUs);
    receivedUs[index] = content.timeReceivedUs === undefined ? null : Number(content.timeReceivedUs);
    capturedUs[index] = captured;
    sizes[index] = sizeBytes;
    payloads[index] = json;
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
  const payloadsJson = `[${payloads.join(',')}]`;
  const idempotencyKey = createHash('sha256')
    .update('tabular\0')
    .update(sourceHash)
    .update(`\0${requestedUs.join(',')}\0${receivedUs.join(',')}\0`)
    .update(payloadsJson)
    .digest();
  let sourceId: string;
  try {
    sourceId = await findOrCreateCaptureSource(deps.db, source, sourceHash);
  } catch (error) {
    throw mapJsonError(error, 'metadata.method_parameters');
  }
  await ensureReadingPartitions(deps.db, months);
  const binaryDataId = binaryDataIdOf(part.organizationId, part.locationId, newObjectId(nowMs));
  const copyText = copyRowsText(
    part.organizationId,
    sourceId,
    nowMs,
    requestedUs,
    receivedUs,
    capturedUs,
    sizes,
    payloads,
  );
  const parsed: unknown[] = [];
  const beforeCommit = await prepareUploadObservers(deps.uploadObservers, {
    part,
    metadata,
    syncedAtMs: nowMs,
    fileId: undefined,
    itemCount: count,
    timesAt: (index) => ({ requestedUs: requestedUs[index] ?? null, receivedUs: receivedUs[index] ?? null }),
    payloadAt: (index) => {
      if (!(index in parsed)) parsed[index] = JSON.parse(payloads[index] as string);
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
        copyText,
        rowCount: count,
        beforeCommit,
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

/**
 * Rows in COPY text format. JSON.stringify escapes every control character, so payloads hold no raw
 * tab or newline; only backslashes need doubling.
 */
function copyRowsText(
  organizationId: string,
  sourceId: string,
  syncedMs: number,
  requestedUs: readonly (number | null)[],
  receivedUs: readonly (number | null)[],
  capturedUs: readonly number[],
  sizes: readonly number[],
  payloads: readonly string[],
): string {
  const prefix = `${organizationId}\t${sourceId}\t`;
  const synced = new Date(syncedMs).toISOString();
  let text = '';
  for (let index = 0; index < payloads.length; index++) {
    const requested = requestedUs[index];
    const received = receivedUs[index];
    const payload = payloads[index] as string;
    text +=
      `${prefix}${microsToIso(capturedUs[index] as number)}\t` +
      `${requested == null ? '\\N' : microsToIso(requested)}\t` +
      `${received == null ? '\\N' : microsToIso(received)}\t` +
      `${synced}\t${sizes[index]}\t${payload.includes('\\') ? payload.replaceAll('\\', '\\\\') : payload}\n`;
  }
  return text;
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
