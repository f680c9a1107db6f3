/** Transport-free shapes of an upload (the API layer converts protobuf into these). */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export type UploadDataType = 'unspecified' | 'binary-sensor' | 'tabular-sensor' | 'file';

/** What every upload carries (viam.app.datasync.v1.UploadMetadata). */
export interface UploadMetadataInput {
  partId: string;
  componentType: string;
  componentName: string;
  methodName: string;
  dataType: UploadDataType;
  fileName: string;
  /** With or without the leading dot; may be empty. */
  fileExtension: string;
  mimeType: string;
  /** Capture method parameters already converted to plain JSON. */
  methodParameters: JsonObject;
  tags: readonly string[];
  datasetIds: readonly string[];
}

/** Capture timestamps in microseconds since the Unix epoch (Postgres keeps microseconds). */
export interface CaptureTimes {
  timeRequestedUs?: bigint | undefined;
  timeReceivedUs?: bigint | undefined;
}

export interface BoundingBoxInput {
  label: string;
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
  confidence?: number | undefined;
}

export interface ClassificationInput {
  label: string;
  confidence?: number | undefined;
}

/** One SensorData of DataCaptureUpload. */
export interface SensorContentInput extends CaptureTimes {
  /** The MIME type named by the SensorMetadata (enum mapped to its string), or `''`. */
  mimeType: string;
  boundingBoxes: readonly BoundingBoxInput[];
  classifications?: readonly ClassificationInput[];
  data: { kind: 'struct'; value: JsonObject } | { kind: 'binary'; value: Uint8Array } | { kind: 'none' };
}

/** Result of any upload: both IDs are always filled (wire-protocol §2.5). */
export interface UploadResult {
  /** The 24-hex ObjectId. */
  fileId: string;
  /** `<organization_id>/<location_id>/<file_id>`. */
  binaryDataId: string;
  /** True when an identical earlier upload was found and nothing new was stored. */
  duplicate: boolean;
}
