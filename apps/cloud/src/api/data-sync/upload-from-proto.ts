import { createRegistry, toJson } from '@bufbuild/protobuf';
import {
  type Any,
  AnySchema,
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  type Timestamp,
} from '@bufbuild/protobuf/wkt';
import type { dataSyncPb } from '@mcloud/protocol';
import type { BinaryCaptureInput } from '../../domain/data/ingest/binary-ingest.ts';
import type {
  CaptureTimes,
  JsonObject,
  JsonValue,
  SensorContentInput,
  UploadDataType,
  UploadMetadataInput,
} from '../../domain/data/ingest/upload-types.ts';

/** Protobuf → domain converters for DataSyncService requests. */

const wellKnownTypes = createRegistry(
  file_google_protobuf_struct,
  file_google_protobuf_wrappers,
  file_google_protobuf_timestamp,
  file_google_protobuf_duration,
);

// DataType enum values (viam.app.datasync.v1.DataType).
const dataTypes: Record<number, UploadDataType> = {
  0: 'unspecified',
  1: 'binary-sensor',
  2: 'tabular-sensor',
  3: 'file',
};

// MimeType enum values (viam.app.datasync.v1.MimeType), deprecated in favour of the string field.
const sensorMimeTypes: Record<number, string> = {
  1: 'image/jpeg',
  2: 'image/png',
  3: 'pointcloud/pcd',
  4: 'video/mp4',
};

/**
 * `map<string, Any>` → plain JSON. RDK packs `google.protobuf.Value`; older RDKs used wrappers such as
 * `StringValue`; both unpack to their plain value. Other known messages become their JSON form; unknown
 * types are kept as `{"@type", "value": <base64>}` rather than failing the upload.
 */
export function methodParametersToJson(parameters: { [key: string]: Any }): JsonObject {
  const result: JsonObject = {};
  for (const [key, any] of Object.entries(parameters)) result[key] = anyToJson(any);
  return result;
}

export function anyToJson(any: Any): JsonValue {
  let json: JsonValue;
  try {
    json = toJson(AnySchema, any, { registry: wellKnownTypes }) as JsonValue;
  } catch {
    return { '@type': any.typeUrl, value: Buffer.from(any.value).toString('base64') };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return json;
  const { '@type': _type, ...rest } = json;
  const keys = Object.keys(rest);
  // Value, Struct, wrappers, Timestamp, Duration encode as {"@type", "value"}.
  if (keys.length === 1 && keys[0] === 'value') {
    const value = rest.value as JsonValue;
    if (typeof value === 'string' && /(U?Int64Value)$/.test(any.typeUrl) && /^-?\d+$/.test(value)) {
      const number = Number(value);
      return Number.isSafeInteger(number) ? number : value;
    }
    return value;
  }
  return rest;
}

export function timestampToMicros(timestamp: Timestamp | undefined): bigint | undefined {
  if (!timestamp) return undefined;
  return timestamp.seconds * 1_000_000n + BigInt(Math.trunc(timestamp.nanos / 1000));
}

export function uploadMetadataFromProto(metadata: dataSyncPb.UploadMetadata): UploadMetadataInput {
  return {
    partId: metadata.partId,
    componentType: metadata.componentType,
    componentName: metadata.componentName,
    methodName: metadata.methodName,
    dataType: dataTypes[metadata.type] ?? 'unspecified',
    fileName: metadata.fileName,
    fileExtension: metadata.fileExtension,
    mimeType: metadata.mimeType,
    methodParameters: methodParametersToJson(metadata.methodParameters),
    tags: metadata.tags,
    datasetIds: metadata.datasetIds,
  };
}

export function captureFromSensorMetadata(
  metadata: dataSyncPb.SensorMetadata | undefined,
): BinaryCaptureInput {
  const times: CaptureTimes = {
    timeRequestedUs: timestampToMicros(metadata?.timeRequested),
    timeReceivedUs: timestampToMicros(metadata?.timeReceived),
  };
  return {
    ...times,
    mimeType: sensorMimeTypes[metadata?.mimeType ?? 0] ?? '',
    boundingBoxes: (metadata?.annotations?.bboxes ?? []).map((box) => ({
      label: box.label,
      xMin: box.xMinNormalized,
      yMin: box.yMinNormalized,
      xMax: box.xMaxNormalized,
      yMax: box.yMaxNormalized,
      confidence: box.confidence,
    })),
    classifications: (metadata?.annotations?.classifications ?? []).map((classification) => ({
      label: classification.label,
      confidence: classification.confidence,
    })),
  };
}

export function sensorContentFromProto(sensorData: dataSyncPb.SensorData): SensorContentInput {
  const capture = captureFromSensorMetadata(sensorData.metadata);
  const { data } = sensorData;
  return {
    ...capture,
    data:
      data.case === 'struct'
        ? { kind: 'struct', value: data.value as JsonObject }
        : data.case === 'binary'
          ? { kind: 'binary', value: data.value }
          : { kind: 'none' },
  };
}
