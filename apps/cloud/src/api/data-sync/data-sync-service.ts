import { Readable } from 'node:stream';
import type { ServiceImpl } from '@connectrpc/connect';
import type { CloudDeps } from '../../cloud-deps.ts';
import { ingestBinary } from '../../domain/data/ingest/binary-ingest.ts';
import { ingestDataCapture } from '../../domain/data/ingest/data-capture-upload.ts';
import { invalidArgument } from '../../domain/errors.ts';
import { principalOf } from '../context.ts';
import {
  type dataSyncServiceWithRawUpload,
  sensorContentsFromBytes,
  uploadMetadataFromBytes,
} from './raw-data-capture-upload.ts';
import { captureFromSensorMetadata, uploadMetadataFromProto } from './upload-from-proto.ts';

type DataSyncHandlers = Partial<ServiceImpl<typeof dataSyncServiceWithRawUpload>>;

const noCapture = { mimeType: '', boundingBoxes: [] };

/** viam.app.datasync.v1.DataSyncService: the ingest side of the data plane. */
export function dataSyncServiceHandlers(deps: CloudDeps): DataSyncHandlers {
  return {
    async dataCaptureUpload(request, context) {
      const principal = principalOf(context);
      const metadata = uploadMetadataFromBytes(request.metadata);
      const result = await ingestDataCapture(
        deps,
        principal,
        metadata,
        sensorContentsFromBytes(metadata, request.sensorContents),
        { signal: context.signal },
      );
      return { fileId: result.fileId, binaryDataId: result.binaryDataId };
    },

    async fileUpload(requests, context) {
      const principal = principalOf(context);
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done || first.value.uploadPacket.case !== 'metadata') {
        throw invalidArgument('metadata', 'the first message of FileUpload must carry the upload metadata');
      }
      const metadata = uploadMetadataFromProto(first.value.uploadPacket.value);
      const body = Readable.from(
        chunksOf(iterator, (message) => {
          if (message.uploadPacket.case === 'fileContents') return message.uploadPacket.value.data;
          throw invalidArgument('file_contents', 'only the first message of FileUpload may carry metadata');
        }),
        { objectMode: false },
      );
      const result = await ingestBinary(deps, principal, metadata, noCapture, body, {
        metadataField: 'metadata',
        signal: context.signal,
        // Each chunk is a subarray of its own request message's buffer, dropped once stored.
        releaseBodyChunks: true,
      });
      return { fileId: result.fileId, binaryDataId: result.binaryDataId };
    },

    async streamingDataCaptureUpload(requests, context) {
      const principal = principalOf(context);
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done || first.value.uploadPacket.case !== 'metadata') {
        throw invalidArgument(
          'metadata',
          'the first message of StreamingDataCaptureUpload must carry the upload metadata',
        );
      }
      const header = first.value.uploadPacket.value;
      if (!header.uploadMetadata) throw invalidArgument('metadata.upload_metadata', 'is required');
      const metadata = uploadMetadataFromProto(header.uploadMetadata);
      if (metadata.dataType === 'tabular-sensor') {
        throw invalidArgument(
          'metadata.upload_metadata.type',
          'StreamingDataCaptureUpload carries binary data; use DataCaptureUpload for tabular data',
        );
      }
      const body = Readable.from(
        chunksOf(iterator, (message) => {
          if (message.uploadPacket.case === 'data') return message.uploadPacket.value;
          throw invalidArgument(
            'data',
            'only the first message of StreamingDataCaptureUpload may carry metadata',
          );
        }),
        { objectMode: false },
      );
      const capture = header.sensorMetadata ? captureFromSensorMetadata(header.sensorMetadata) : noCapture;
      const result = await ingestBinary(deps, principal, metadata, capture, body, {
        metadataField: 'metadata.upload_metadata',
        signal: context.signal,
        // Each chunk is a subarray of its own request message's buffer, dropped once stored.
        releaseBodyChunks: true,
      });
      return { fileId: result.fileId, binaryDataId: result.binaryDataId };
    },
  };
}

/**
 * The remaining messages of a client stream as byte chunks. Pulled by the blob store's pipeline, so the
 * next message is read only when the previous chunk was written (backpressure end to end).
 */
async function* chunksOf<T>(
  iterator: AsyncIterator<T>,
  bytesOf: (message: T) => Uint8Array,
): AsyncGenerator<Uint8Array> {
  for (;;) {
    const next = await iterator.next();
    if (next.done) return;
    const bytes = bytesOf(next.value);
    if (bytes.byteLength > 0) yield bytes;
  }
}
