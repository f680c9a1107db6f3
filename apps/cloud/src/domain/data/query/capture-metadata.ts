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

/** Columns a row carries for its capture metadata (capture sources and binary items alike). */
export interface CaptureMetadataRow {
  organization_id: string;
  location_id: string;
  robot_id: string;
  part_id: string;
  robot_name: string | null;
  part_name: string | null;
  component_type: string;
  component_name: string;
  method_name: string;
  method_parameters: JsonRecord;
  tags: string[];
}

export function captureMetadataFromRow(row: CaptureMetadataRow, mimeType: string): CaptureMetadata {
  return {
    organizationId: row.organization_id,
    locationId: row.location_id,
    robotName: row.robot_name ?? '',
    robotId: row.robot_id,
    partName: row.part_name ?? '',
    partId: row.part_id,
    componentType: row.component_type,
    componentName: row.component_name,
    methodName: row.method_name,
    methodParameters: row.method_parameters ?? {},
    tags: row.tags,
    mimeType,
  };
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

export interface Classification {
  id: string;
  label: string;
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
  classifications: Classification[];
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
