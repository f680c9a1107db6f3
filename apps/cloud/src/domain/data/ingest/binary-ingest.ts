import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { BlobStore } from '../../../infra/blobs/blob-store.ts';
import { type Database, withTransaction } from '../../../infra/postgres/database.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newObjectId } from '../../shared/ids.ts';
import { binaryDataIdOf, fileIdOf } from './binary-data-id.ts';
import { canonicalJson } from './capture-sources.ts';
import { captureInstantUs, microsToIso } from './capture-time.ts';
import { resolveFileType } from './mime-types.ts';
import { mapJsonError } from './tabular-ingest.ts';
import { prepareUploadObservers, type UploadObserver } from './upload-observer.ts';
import { resolveUploadPart, type UploadPart } from './upload-part.ts';
import { findReceipt } from './upload-receipts.ts';
import type {
  BoundingBoxInput,
  CaptureTimes,
  ClassificationInput,
  UploadMetadataInput,
  UploadResult,
} from './upload-types.ts';

export interface BinaryIngestDeps {
  db: Database;
  blobs: BlobStore;
  clock: Clock;
  /** Told about every stored upload inside its transaction (triggers). */
  uploadObservers?: readonly UploadObserver[];
}

/** The per-capture part of a binary upload (SensorMetadata); empty for plain file uploads. */
export interface BinaryCaptureInput extends CaptureTimes {
  /** MIME type named by the SensorMetadata enum, or `''`. */
  mimeType: string;
  boundingBoxes: readonly BoundingBoxInput[];
  classifications?: readonly ClassificationInput[];
}

export interface BinaryIngestOptions {
  /** Field path of the metadata in the request, for error messages (`metadata`, `metadata.upload_metadata`). */
  metadataField?: string;
  signal?: AbortSignal;
  /** The body's chunks are message buffers nothing reads again: the blob store may free them once written. */
  releaseBodyChunks?: boolean;
}

const maxBoundingBoxes = 10_000;

/**
 * Stores one binary item: validates everything that can be validated up front, streams the body into the
 * blob store under `<org>/<location>/<file id>` (hashing it on the way), then writes the receipt, the
 * `binary_data` row and its bounding boxes in one transaction. If that fails the blob is deleted; if an
 * identical earlier upload exists (same part, file name, component/method, capture times and content) the
 * new blob is deleted and the stored IDs are returned.
 */
export async function ingestBinary(
  deps: BinaryIngestDeps,
  principal: Principal,
  metadata: UploadMetadataInput,
  capture: BinaryCaptureInput,
  body: Readable | Uint8Array,
  options: BinaryIngestOptions = {},
): Promise<UploadResult> {
  const metadataField = options.metadataField ?? 'metadata';
  const part = await resolveUploadPart(deps, principal, metadata.partId, `${metadataField}.part_id`);
  const nowMs = deps.clock.nowMs();
  const capturedUs = captureInstantUs(capture, nowMs, 'sensor_metadata');
  const boxes = validateBoundingBoxes(capture.boundingBoxes);
  const classifications = validateClassifications(capture.classifications ?? []);
  const datasetIds = await requireDatasets(
    deps.db,
    part,
    metadata.datasetIds,
    `${metadataField}.dataset_ids`,
  );
  const { fileExt, mimeType } = resolveFileType({
    fileExtension: metadata.fileExtension,
    fileName: metadata.fileName,
    mimeType: metadata.mimeType || capture.mimeType,
  });
  const fileId = newObjectId(nowMs);
  const binaryDataId = binaryDataIdOf(part.organizationId, part.locationId, fileId);
  const blobKey = binaryDataId;
  const stored = await deps.blobs.put(blobKey, body, {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.releaseBodyChunks ? { releaseBodyChunks: true } : {}),
  });
  const idempotencyKey = createHash('sha256')
    .update(
      canonicalJson([
        'binary',
        part.partId,
        metadata.dataType,
        metadata.fileName,
        fileExt,
        metadata.componentType,
        metadata.componentName,
        metadata.methodName,
        capture.timeRequestedUs === undefined ? null : capture.timeRequestedUs.toString(),
        capture.timeReceivedUs === undefined ? null : capture.timeReceivedUs.toString(),
        stored.sha256Hex,
        stored.sizeBytes,
      ]),
    )
    .digest();
  const times = {
    requestedUs: capture.timeRequestedUs === undefined ? null : Number(capture.timeRequestedUs),
    receivedUs: capture.timeReceivedUs === undefined ? null : Number(capture.timeReceivedUs),
  };
  let duplicateOf: string | undefined;
  try {
    const beforeCommit = await prepareUploadObservers(deps.uploadObservers, {
      part,
      metadata,
      syncedAtMs: nowMs,
      fileId,
      itemCount: 1,
      timesAt: () => times,
      payloadAt: () => undefined,
    });
    duplicateOf = await withTransaction(deps.db, async (client) => {
      const receipt = await client.query(
        `INSERT INTO upload_receipts (organization_id, idempotency_key, file_id) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING RETURNING file_id`,
        [part.organizationId, idempotencyKey, binaryDataId],
      );
      if (receipt.rowCount === 0) {
        const existing = await findReceipt(client, part.organizationId, idempotencyKey);
        if (!existing)
          throw new DomainError('Aborted', 'a concurrent identical upload failed; retry the upload');
        return existing;
      }
      await client.query(
        `INSERT INTO binary_data (id, organization_id, location_id, robot_id, part_id, component_type, component_name,
           method_name, method_parameters, file_name, file_ext, mime_type, tags, dataset_ids, captured_at,
           time_requested, time_received, synced_at, size_bytes, sha256, blob_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13::text[], $14::text[], $15, $16, $17, $18,
           $19, $20, $21)`,
        [
          binaryDataId,
          part.organizationId,
          part.locationId,
          part.robotId,
          part.partId,
          metadata.componentType,
          metadata.componentName,
          metadata.methodName,
          JSON.stringify(metadata.methodParameters),
          metadata.fileName,
          fileExt,
          mimeType,
          uniqueStrings(metadata.tags),
          datasetIds,
          microsToIso(capturedUs),
          capture.timeRequestedUs === undefined ? null : microsToIso(capture.timeRequestedUs),
          capture.timeReceivedUs === undefined ? null : microsToIso(capture.timeReceivedUs),
          new Date(nowMs),
          stored.sizeBytes,
          stored.sha256Hex,
          blobKey,
        ],
      );
      if (boxes.length > 0) {
        await client.query(
          `INSERT INTO bounding_boxes (id, organization_id, binary_id, label, x_min, y_min, x_max, y_max, confidence)
           SELECT b.id, $1, $2, b.label, b.x_min, b.y_min, b.x_max, b.y_max, b.confidence
           FROM unnest($3::text[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[])
             AS b(id, label, x_min, y_min, x_max, y_max, confidence)`,
          [
            part.organizationId,
            binaryDataId,
            boxes.map(() => newObjectId(nowMs)),
            boxes.map((box) => box.label),
            boxes.map((box) => box.xMin),
            boxes.map((box) => box.yMin),
            boxes.map((box) => box.xMax),
            boxes.map((box) => box.yMax),
            boxes.map((box) => box.confidence ?? null),
          ],
        );
      }
      if (classifications.length > 0) {
        await client.query(
          `INSERT INTO classifications (id, organization_id, binary_id, label, confidence)
           SELECT c.id, $1, $2, c.label, c.confidence
             FROM unnest($3::text[], $4::text[], $5::float8[]) WITH ORDINALITY AS c(id, label, confidence, n)
            ORDER BY c.n`,
          [
            part.organizationId,
            binaryDataId,
            classifications.map(() => newObjectId(nowMs)),
            classifications.map((classification) => classification.label),
            classifications.map((classification) => classification.confidence ?? null),
          ],
        );
      }
      if (beforeCommit) await beforeCommit(client);
      return undefined;
    });
  } catch (error) {
    await deps.blobs.delete(blobKey).catch(() => {});
    throw mapJsonError(error, `${metadataField}.method_parameters`);
  }
  if (duplicateOf !== undefined) {
    await deps.blobs.delete(blobKey).catch(() => {});
    return { fileId: fileIdOf(duplicateOf), binaryDataId: duplicateOf, duplicate: true };
  }
  return { fileId, binaryDataId, duplicate: false };
}

function uniqueStrings(values: readonly string[]): string[] {
  return [...new Set(values)];
}

const maxClassifications = 10_000;
const maxLabelLength = 512;

function validateClassifications(
  classifications: readonly ClassificationInput[],
): readonly ClassificationInput[] {
  const field = 'sensor_metadata.annotations.classifications';
  if (classifications.length > maxClassifications) {
    throw invalidArgument(
      field,
      `must contain at most ${maxClassifications} entries`,
      classifications.length,
    );
  }
  classifications.forEach((classification, index) => {
    const label = classification.label;
    if (label.trim() === '') throw invalidArgument(`${field}[${index}].label`, 'is required');
    if (label.length > maxLabelLength) {
      throw invalidArgument(
        `${field}[${index}].label`,
        `must be at most ${maxLabelLength} characters`,
        label,
      );
    }
    const confidence = classification.confidence;
    if (confidence !== undefined && !(Number.isFinite(confidence) && confidence >= 0 && confidence <= 1)) {
      throw invalidArgument(`${field}[${index}].confidence`, 'must be between 0 and 1', confidence);
    }
  });
  return classifications;
}

function validateBoundingBoxes(boxes: readonly BoundingBoxInput[]): readonly BoundingBoxInput[] {
  if (boxes.length > maxBoundingBoxes) {
    throw invalidArgument(
      'sensor_metadata.annotations.bboxes',
      `must contain at most ${maxBoundingBoxes} entries`,
      boxes.length,
    );
  }
  boxes.forEach((box, index) => {
    const field = `sensor_metadata.annotations.bboxes[${index}]`;
    if (box.label.trim() === '') throw invalidArgument(`${field}.label`, 'is required');
    const inUnit = (value: number) => Number.isFinite(value) && value >= 0 && value <= 1;
    if (!inUnit(box.xMin) || !inUnit(box.xMax) || !(box.xMin < box.xMax)) {
      throw invalidArgument(
        field,
        'needs 0 <= x_min_normalized < x_max_normalized <= 1',
        `${box.xMin}..${box.xMax}`,
      );
    }
    if (!inUnit(box.yMin) || !inUnit(box.yMax) || !(box.yMin < box.yMax)) {
      throw invalidArgument(
        field,
        'needs 0 <= y_min_normalized < y_max_normalized <= 1',
        `${box.yMin}..${box.yMax}`,
      );
    }
    if (box.confidence !== undefined && !inUnit(box.confidence)) {
      throw invalidArgument(`${field}.confidence`, 'must be between 0 and 1', box.confidence);
    }
  });
  return boxes;
}

/** Every dataset must exist in the part's organization; returns the de-duplicated list. */
async function requireDatasets(
  db: Database,
  part: UploadPart,
  datasetIds: readonly string[],
  field: string,
): Promise<string[]> {
  const unique = uniqueStrings(datasetIds.map((id) => id.trim()));
  if (unique.length === 0) return [];
  const result = await db.query<{ id: string }>(
    'SELECT id FROM datasets WHERE organization_id = $1 AND id = ANY($2::text[])',
    [part.organizationId, unique],
  );
  const found = new Set(result.rows.map((row) => row.id));
  const missingIndex = datasetIds.findIndex((id) => !found.has(id.trim()));
  if (missingIndex !== -1) {
    throw invalidArgument(
      `${field}[${missingIndex}]`,
      "no dataset with this ID exists in the part's organization",
      datasetIds[missingIndex],
    );
  }
  return unique;
}
