/**
 * `viam.service.datamanager.v1.DataManagerService` on the machine API: `Sync` (one sync pass now),
 * `UploadBinaryDataToDatasets` (bytes into datasets through FileUpload) and `DoCommand`.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { dataManagerPb } from '@mcloud/protocol/machine';
import { doCommandHandler, type ResourceCalls } from '../api/components/resource-calls.ts';
import { MachineError } from '../errors.ts';
import { dataManagerApi, isDataManager } from './data-manager-api.ts';

// viam.app.datasync.v1.MimeType → MIME type.
const mimeTypes: Record<number, string> = {
  1: 'image/jpeg',
  2: 'image/png',
  3: 'pointcloud/pcd',
  4: 'video/mp4',
};

export function dataManagerHandlers(
  calls: ResourceCalls,
): Partial<ServiceImpl<typeof dataManagerPb.DataManagerService>> {
  return {
    async sync(request, context) {
      await calls.call(
        dataManagerApi,
        isDataManager,
        request.name,
        request.extra,
        context,
        (manager, options) => manager.sync(options),
      );
      return {};
    },
    async uploadBinaryDataToDatasets(request, context) {
      if (request.binaryData.length === 0) {
        throw new MachineError('InvalidArgument', 'binary_data: must not be empty');
      }
      const mimeType = mimeTypes[request.mimeType] ?? '';
      await calls.call(
        dataManagerApi,
        isDataManager,
        request.name,
        request.extra,
        context,
        (manager, options) =>
          manager.uploadBinaryDataToDatasets(
            { binaryData: request.binaryData, tags: request.tags, datasetIds: request.datasetIds, mimeType },
            options,
          ),
      );
      return {};
    },
    doCommand: doCommandHandler(calls, dataManagerApi, isDataManager),
  };
}
