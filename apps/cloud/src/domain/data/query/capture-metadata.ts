import type { EpochMicros } from './data-filter.ts';

/** JSON values as stored in jsonb (method parameters, tabular payloads). */
export type JsonRecord = { [key: string]: unknown };

/** Where and how a data item was captured (wire `CaptureMetadata`). */
export interface CaptureMetadata {
  organizationId: string;
  locationId: string;
  robotName: string;
  robotId: string;
  partName: string;
  partId: string;
  componentType: string;
  componentName: string;
  methodName: string;
  methodParameters: JsonRecord;
  tags: readonly string[];
  mimeType: string;
}

export interface BoundingBox {
  id: string;
  label: string;
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
  confidence?: number;
}

export interface BinaryItem {
  fileId: string;
  binaryDataId: string;
  metadata: CaptureMetadata;
  fileName: string;
  fileExt: string;
  datasetIds: readonly string[];
  capturedAt: EpochMicros;
  timeRequested?: EpochMicros;
  timeReceived?: EpochMicros;
  sizeBytes: number;
  blobKey: string;
  internal: boolean;
  boundingBoxes: BoundingBox[];
}

export interface TabularReading {
  id: string;
  sourceId: string;
  capturedAt: EpochMicros;
  timeRequested?: EpochMicros;
  timeReceived?: EpochMicros;
  syncedAt: EpochMicros;
  sizeBytes: number;
  data: JsonRecord;
}

export function microsOrUndefined(value: string | null): EpochMicros | undefined {
  return value === null ? undefined : BigInt(value);
}
