/**
 * Uploads a file that is not a capture file (from `additional_sync_paths`, or left in the capture
 * directory) with the client-streaming `FileUpload` (machine-runtime.md A5.4): first the metadata
 * `{part_id, type FILE, file_name (absolute path), file_extension, tags, dataset_ids}`, then the contents
 * in 64 KiB chunks read from disk as the stream goes. Tags are the service tags plus every ancestor
 * directory named `tag=<x>`; dataset IDs come from ancestor directories named `dataset=<id>`.
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { dataSyncPb } from '@mcloud/protocol/machine';
import { type UploadTarget, uploadChunkBytes } from './capture-file-upload.ts';

export interface ArbitraryFileLabels {
  readonly tags: string[];
  readonly datasetIds: string[];
}

/** Tags and datasets named by the directories between `root` (exclusive) and the file. */
export function labelsFromPath(
  root: string,
  filePath: string,
  serviceTags: readonly string[],
): ArbitraryFileLabels {
  const tags = new Set(serviceTags);
  const datasetIds = new Set<string>();
  const relative = path.relative(root, path.dirname(filePath));
  for (const segment of relative === '' ? [] : relative.split(path.sep)) {
    if (segment.startsWith('tag=') && segment.length > 4) tags.add(segment.slice(4));
    else if (segment.startsWith('dataset=') && segment.length > 8) datasetIds.add(segment.slice(8));
  }
  return { tags: [...tags], datasetIds: [...datasetIds] };
}

export async function uploadArbitraryFile(
  target: UploadTarget,
  filePath: string,
  labels: ArbitraryFileLabels,
  signal: AbortSignal,
): Promise<void> {
  await target.client.fileUpload(fileUploadRequests(target.partId, filePath, labels, signal), { signal });
}

async function* fileUploadRequests(
  partId: string,
  filePath: string,
  labels: ArbitraryFileLabels,
  signal: AbortSignal,
): AsyncGenerator<dataSyncPb.FileUploadRequest> {
  yield create(dataSyncPb.FileUploadRequestSchema, {
    uploadPacket: {
      case: 'metadata',
      value: {
        partId,
        type: dataSyncPb.DataType.FILE,
        fileName: path.resolve(filePath),
        fileExtension: path.extname(filePath),
        tags: labels.tags,
        datasetIds: labels.datasetIds,
      },
    },
  });
  const stream = createReadStream(filePath, { highWaterMark: uploadChunkBytes, signal });
  for await (const chunk of stream) {
    yield create(dataSyncPb.FileUploadRequestSchema, {
      uploadPacket: { case: 'fileContents', value: { data: chunk as Buffer } },
    });
  }
}
