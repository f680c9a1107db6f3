export {
  type CallOutcome,
  Code,
  callOutcome,
  codeName,
  expectRpcError,
  isSdkRpcError,
  type SdkRpcError,
} from './connect-errors.ts';
export {
  createSdkClient,
  createSdkClientWithCredential,
  createSdkClientWithPartSecret,
  grpcTransportFactory,
  type SdkApiKeyClientOptions,
  type SdkClientOptions,
  type SdkPartSecretClientOptions,
  type SdkTransportKind,
  sdkTransportKinds,
} from './sdk-client.ts';
export {
  type SdkDataSyncRpcs,
  type SdkDatasetRpcs,
  type StreamingDataCaptureUploadOptions,
  type StreamingDataCaptureUploadRequestInit,
  type StreamingUploadMetadataInit,
  sdkDataSyncRpcs,
  sdkDatasetRpcs,
  streamingDataCaptureUpload,
  structFromJson,
} from './sdk-raw-rpcs.ts';
export { createSdkRobotClient, type SdkRobotClientOptions } from './sdk-robot-client.ts';
