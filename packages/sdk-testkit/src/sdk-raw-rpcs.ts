import { type JsonObject, Struct, Timestamp } from '@bufbuild/protobuf';
import type { ViamClient } from '@viamrobotics/sdk';

/**
 * RPCs the SDK 0.61.1 implements on the wire but does not wrap in `DataClient`: `DatasetService.MergeDatasets`
 * and `DataSyncService.StreamingDataCaptureUpload`. They are reached through the SDK's own generated Connect v1
 * clients (the private `datasetClient` / `dataSyncClient` of `DataClient`), so the request still goes through
 * the SDK's schema and its authenticated transport.
 */
export interface SdkDatasetRpcs {
  mergeDatasets(request: {
    datasetIds: string[];
    name: string;
    organizationId: string;
  }): Promise<{ datasetId: string }>;
}

export interface StreamingUploadMetadataInit {
  uploadMetadata: {
    partId: string;
    componentType: string;
    componentName: string;
    methodName: string;
    /** `DataType.BINARY_SENSOR` = 1. */
    type: number;
    fileExtension: string;
    fileName?: string;
    mimeType?: string;
    tags?: string[];
    datasetIds?: string[];
  };
  sensorMetadata: { timeRequested?: Timestamp; timeReceived?: Timestamp };
}

export type StreamingDataCaptureUploadRequestInit =
  | { uploadPacket: { case: 'metadata'; value: StreamingUploadMetadataInit } }
  | { uploadPacket: { case: 'data'; value: Uint8Array } };

export interface SdkDataSyncRpcs {
  streamingDataCaptureUpload(
    requests: AsyncIterable<StreamingDataCaptureUploadRequestInit>,
  ): Promise<{ fileId: string; binaryDataId: string }>;
}

export function sdkDatasetRpcs(client: ViamClient): SdkDatasetRpcs {
  return (client.dataClient as unknown as { datasetClient: SdkDatasetRpcs }).datasetClient;
}

export function sdkDataSyncRpcs(client: ViamClient): SdkDataSyncRpcs {
  return (client.dataClient as unknown as { dataSyncClient: SdkDataSyncRpcs }).dataSyncClient;
}

export interface StreamingDataCaptureUploadOptions {
  partId: string;
  componentType: string;
  componentName: string;
  methodName: string;
  fileExtension: string;
  requestTimes: [Date, Date];
  tags?: string[];
  datasetIds?: string[];
  /** Bytes per data message; RDK uses 64 KiB. */
  chunkSize?: number;
}

/**
 * Uploads one binary capture the way viam-server does for large captures: a metadata packet, then the payload
 * in chunks. Needs a client-streaming transport (`grpc`); over `grpc-web` the SDK throws before sending.
 */
export function streamingDataCaptureUpload(
  client: ViamClient,
  data: Uint8Array,
  options: StreamingDataCaptureUploadOptions,
): Promise<{ fileId: string; binaryDataId: string }> {
  const chunkSize = options.chunkSize ?? 64 * 1024;
  async function* requests(): AsyncGenerator<StreamingDataCaptureUploadRequestInit> {
    yield {
      uploadPacket: {
        case: 'metadata',
        value: {
          uploadMetadata: {
            partId: options.partId,
            componentType: options.componentType,
            componentName: options.componentName,
            methodName: options.methodName,
            type: 1,
            fileExtension: options.fileExtension,
            tags: options.tags ?? [],
            datasetIds: options.datasetIds ?? [],
          },
          sensorMetadata: {
            timeRequested: Timestamp.fromDate(options.requestTimes[0]),
            timeReceived: Timestamp.fromDate(options.requestTimes[1]),
          },
        },
      },
    };
    for (let offset = 0; offset < data.length; offset += chunkSize) {
      yield { uploadPacket: { case: 'data', value: data.subarray(offset, offset + chunkSize) } };
    }
  }
  return sdkDataSyncRpcs(client).streamingDataCaptureUpload(requests());
}

/** A protobuf-es v1 `Struct` (what `AppClient.updateRobotPart` takes) from a JSON object. */
export function structFromJson(json: JsonObject): Struct {
  return Struct.fromJson(json);
}
