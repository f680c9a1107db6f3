/**
 * The Viam wire schema (protobuf-es v2), generated at build time from the pinned
 * @viamrobotics/sdk. One namespace per protobuf file we serve; each holds the `file_*`
 * descriptor, the `*Schema` message descriptors, the enums and the service descriptors.
 */
export * as agentPb from '../gen/app/agent/v1/agent_pb.js';
export * as buildPb from '../gen/app/build/v1/build_pb.js';
export * as dataPipelinesPb from '../gen/app/datapipelines/v1/data_pipelines_pb.js';
export * as datasetPb from '../gen/app/dataset/v1/dataset_pb.js';
export * as mlTrainingPb from '../gen/app/mltraining/v1/ml_training_pb.js';
export * as packagesPb from '../gen/app/packages/v1/packages_pb.js';
export * as appPb from '../gen/app/v1/app_pb.js';
export * as billingPb from '../gen/app/v1/billing_pb.js';
export * as endUserPb from '../gen/app/v1/end_user_pb.js';
/**
 * mcloud.datasync.v1.RawDataCaptureUploadRequest: DataCaptureUploadRequest with each SensorData left
 * encoded (wire-identical), for the cloud's tabular ingest hot path.
 */
export * as rawDataSyncPb from '../gen/mcloud/datasync/v1/raw_data_capture_upload_pb.js';
/**
 * mcloud.triggers.v1.TriggerDeliveryService: Machine Cloud's own listing and redelivery of trigger
 * deliveries (webhooks and emails), semantics in proto-own/mcloud/triggers/v1/trigger_deliveries.proto.
 */
export * as triggerDeliveriesPb from '../gen/mcloud/triggers/v1/trigger_deliveries_pb.js';
export * as signalingPb from '../gen/proto/rpc/webrtc/v1/signaling_pb.js';
export * as provisioningPb from '../gen/provisioning/v1/provisioning_pb.js';
/** The machine's part of the schema (`@mcloud/protocol/machine`, see machine.ts). */
export {
  authPb,
  cameraPb,
  commonPb,
  dataManagerPb,
  dataPb,
  dataSyncPb,
  genericPb,
  genericServicePb,
  machineConnectionPb,
  machineRobotPb,
  modulePb,
  motorPb,
  reflectionPb,
  reflectionV1alphaPb,
  robotPb,
  sensorPb,
} from './machine.ts';
