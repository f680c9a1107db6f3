/**
 * Uploads one completed capture file through `viam.app.datasync.v1.DataSyncService`
 * (machine-runtime.md A5.4): tabular → one `DataCaptureUpload` with every reading; binary → per reading
 * a unary `DataCaptureUpload` (≤ 1 MB) or a client-streaming `StreamingDataCaptureUpload` whose chunks
 * are read from disk as the stream goes. The cloud de-duplicates identical uploads, so a retry after a
 * lost acknowledgement stores nothing twice.
 */
import { create } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import type { Client } from '@connectrpc/connect';
import { dataSyncPb } from '@mcloud/protocol/machine';
import {
  type CaptureFileMetadata,
  methodParametersToProto,
  sensorDataToProto,
  sensorMetadataToProto,
} from './capture-file-format.ts';
import { payloadChunks, payloadOf, readCaptureFile } from './capture-file-reader.ts';
import { mimeForFileExtension } from './capture-methods.ts';

export type DataSyncClient = Client<typeof dataSyncPb.DataSyncService>;

/** Binary payloads above this go through StreamingDataCaptureUpload (as the reference does). */
export const streamingThresholdBytes = 1_000_000;
export const uploadChunkBytes = 64 * 1024;
/** DataCaptureUploadRequest.sensor_contents. */
const sensorContentsField = 2;

export interface UploadTarget {
  readonly client: DataSyncClient;
  readonly partId: string;
}

/** What happened to the file: sent to the cloud, or nothing to send (no readings). */
export type CaptureUploadOutcome = { kind: 'uploaded'; readings: number } | { kind: 'empty' };

export async function uploadCaptureFile(
  target: UploadTarget,
  filePath: string,
  signal: AbortSignal,
): Promise<CaptureUploadOutcome> {
  const file = await readCaptureFile(filePath, signal);
  const count = file.kind === 'tabular' ? file.rawReadings.length : file.readings.length;
  if (count === 0) return { kind: 'empty' };
  const metadata = uploadMetadataOf(target.partId, file.metadata);
  if (file.kind === 'tabular') {
    // `sensor_contents` (field 2) carried as the file's own SensorData bytes: no Struct is decoded
    // or re-encoded on the way (the wire bytes are identical).
    const request = create(dataSyncPb.DataCaptureUploadRequestSchema, { metadata });
    request.$unknown = file.rawReadings.map((data) => ({
      no: sensorContentsField,
      wireType: WireType.LengthDelimited,
      data,
    }));
    await target.client.dataCaptureUpload(request, { signal });
    return { kind: 'uploaded', readings: count };
  }
  for (const reading of file.readings) {
    if (reading.length <= streamingThresholdBytes) {
      const bytes = await payloadOf(filePath, reading);
      await target.client.dataCaptureUpload(
        {
          metadata,
          sensorContents: [
            sensorDataToProto({
              timeRequestedMs: reading.timeRequestedMs,
              timeReceivedMs: reading.timeReceivedMs,
              data: { kind: 'binary', value: bytes },
            }),
          ],
        },
        { signal },
      );
    } else {
      await target.client.streamingDataCaptureUpload(streamingRequests(metadata, filePath, reading), {
        signal,
      });
    }
  }
  return { kind: 'uploaded', readings: file.readings.length };
}

async function* streamingRequests(
  metadata: dataSyncPb.UploadMetadata,
  filePath: string,
  reading: Parameters<typeof payloadChunks>[1],
): AsyncGenerator<dataSyncPb.StreamingDataCaptureUploadRequest> {
  yield create(dataSyncPb.StreamingDataCaptureUploadRequestSchema, {
    uploadPacket: {
      case: 'metadata',
      value: { uploadMetadata: metadata, sensorMetadata: sensorMetadataToProto(reading) },
    },
  });
  for await (const chunk of payloadChunks(filePath, reading, uploadChunkBytes)) {
    yield create(dataSyncPb.StreamingDataCaptureUploadRequestSchema, {
      uploadPacket: { case: 'data', value: chunk },
    });
  }
}

export function uploadMetadataOf(partId: string, metadata: CaptureFileMetadata): dataSyncPb.UploadMetadata {
  return create(dataSyncPb.UploadMetadataSchema, {
    partId,
    componentType: metadata.componentType,
    componentName: metadata.componentName,
    methodName: metadata.methodName,
    type:
      metadata.dataType === 'tabular'
        ? dataSyncPb.DataType.TABULAR_SENSOR
        : dataSyncPb.DataType.BINARY_SENSOR,
    methodParameters: methodParametersToProto(metadata.methodParameters),
    fileExtension: metadata.fileExtension,
    tags: [...metadata.tags],
    mimeType: metadata.dataType === 'binary' ? mimeForFileExtension(metadata.fileExtension) : '',
  });
}
