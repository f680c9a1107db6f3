/**
 * `rdk:service:data_manager` — viam.service.datamanager.v1.DataManagerService, as the machine API
 * (ms-api) serves it: `Sync`, `UploadBinaryDataToDatasets`, `DoCommand`.
 */
import type { CallOptions, Resource } from '../resources/resource.ts';
import { apiEquals, serviceApi } from '../resources/resource-name.ts';

export const dataManagerApi = serviceApi('data_manager');

export interface BinaryDatasetUpload {
  readonly binaryData: Uint8Array;
  readonly tags: readonly string[];
  readonly datasetIds: readonly string[];
  /** e.g. `image/jpeg`; decides the file extension. */
  readonly mimeType: string;
}

export interface DataManagerStatus {
  readonly collectors: number;
  readonly capturedReadings: number;
  readonly captureFailures: number;
  readonly uploadedFiles: number;
  readonly uploadedReadings: number;
  readonly failedFiles: number;
  readonly retries: number;
}

export interface DataManager extends Resource {
  /** `Sync`: one sync pass now (FailedPrecondition "not connected to the cloud" without a connection). */
  sync(options: CallOptions): Promise<void>;
  /** `UploadBinaryDataToDatasets`: stores the bytes in the given datasets via FileUpload. */
  uploadBinaryDataToDatasets(upload: BinaryDatasetUpload, options: CallOptions): Promise<void>;
  status(): DataManagerStatus;
}

export function isDataManager(resource: Resource): resource is DataManager {
  return apiEquals(resource.name.api, dataManagerApi);
}
