import { fromBinary } from '@bufbuild/protobuf';
import { dataSyncPb, rawDataSyncPb } from '@mcloud/protocol';
import type { TabularReadings } from '../../domain/data/ingest/tabular-readings.ts';
import type { SensorContentInput, UploadMetadataInput } from '../../domain/data/ingest/upload-types.ts';
import { invalidArgument } from '../../domain/errors.ts';
import { decodeTabularReadings } from './tabular-sensor-data-decoder.ts';
import { sensorContentFromProto, uploadMetadataFromProto } from './upload-from-proto.ts';

const { DataSyncService } = dataSyncPb;
const publishedUpload = DataSyncService.method.dataCaptureUpload;
const rawUpload = { ...publishedUpload, input: rawDataSyncPb.RawDataCaptureUploadRequestSchema };

/**
 * DataSyncService as registered on the router: identical on the wire, but DataCaptureUpload's request
 * is decoded as `RawDataCaptureUploadRequest`, so each SensorData arrives still encoded and tabular
 * readings take the direct bytes → JSON path (tabular-sensor-data-decoder.ts) (see raw_data_capture_upload.proto).
 */
export const dataSyncServiceWithRawUpload = {
  ...DataSyncService,
  methods: DataSyncService.methods.map((method) => (method === publishedUpload ? rawUpload : method)),
  method: { ...DataSyncService.method, dataCaptureUpload: rawUpload },
};

export function uploadMetadataFromBytes(bytes: Uint8Array | undefined): UploadMetadataInput {
  if (bytes === undefined) throw invalidArgument('metadata', 'is required');
  return uploadMetadataFromProto(decode(dataSyncPb.UploadMetadataSchema, bytes, 'metadata'));
}

/**
 * The upload's entries: for a tabular (or unspecified) upload whose entries all have the common shape,
 * readings straight from the bytes (the hot path); otherwise each entry decoded with protobuf-es.
 */
export function sensorContentsFromBytes(
  metadata: UploadMetadataInput,
  contents: readonly Uint8Array[],
): TabularReadings | SensorContentInput[] {
  if (metadata.dataType === 'tabular-sensor' || metadata.dataType === 'unspecified') {
    const readings = decodeTabularReadings(contents);
    if (readings) return readings;
  }
  return contents.map((bytes, index) =>
    sensorContentFromProto(decode(dataSyncPb.SensorDataSchema, bytes, `sensor_contents[${index}]`)),
  );
}

function decode<T extends typeof dataSyncPb.SensorDataSchema | typeof dataSyncPb.UploadMetadataSchema>(
  schema: T,
  bytes: Uint8Array,
  field: string,
) {
  try {
    return fromBinary(schema, bytes);
  } catch (error) {
    throw invalidArgument(field, `is not a valid ${schema.typeName} message: ${(error as Error).message}`);
  }
}
