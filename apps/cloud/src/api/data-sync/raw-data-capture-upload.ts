import { fromBinary } from '@bufbuild/protobuf';
import { dataSyncPb, rawDataSyncPb } from '@mcloud/protocol';
import type { SensorContentInput, UploadMetadataInput } from '../../domain/data/ingest/upload-types.ts';
import { invalidArgument } from '../../domain/errors.ts';
import { decodeTabularSensorData } from './tabular-sensor-data-decoder.ts';
import { sensorContentFromProto, uploadMetadataFromProto } from './upload-from-proto.ts';

const { DataSyncService } = dataSyncPb;
const publishedUpload = DataSyncService.method.dataCaptureUpload;
const rawUpload = { ...publishedUpload, input: rawDataSyncPb.RawDataCaptureUploadRequestSchema };

/**
 * DataSyncService as registered on the router: identical on the wire, but DataCaptureUpload's request
 * is decoded as `RawDataCaptureUploadRequest`, so each SensorData arrives still encoded and tabular
 * readings take the direct bytes → JSON path (see raw_data_capture_upload.proto).
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

export function sensorContentFromBytes(bytes: Uint8Array, field: string): SensorContentInput {
  const tabular = decodeTabularSensorData(bytes);
  if (tabular) {
    return {
      timeRequestedUs: tabular.timeRequestedUs,
      timeReceivedUs: tabular.timeReceivedUs,
      mimeType: '',
      boundingBoxes: [],
      data: { kind: 'json', text: tabular.json },
    };
  }
  return sensorContentFromProto(decode(dataSyncPb.SensorDataSchema, bytes, field));
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
