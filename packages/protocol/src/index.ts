/**
 * The Viam wire schema (protobuf-es v2), generated at build time from the pinned
 * @viamrobotics/sdk. One namespace per protobuf file we serve; each holds the `file_*`
 * descriptor, the `*Schema` message descriptors, the enums and the service descriptors.
 */
export * as agentPb from '../gen/app/agent/v1/agent_pb.js';
export * as buildPb from '../gen/app/build/v1/build_pb.js';
export * as dataPb from '../gen/app/data/v1/data_pb.js';
export * as dataPipelinesPb from '../gen/app/datapipelines/v1/data_pipelines_pb.js';
export * as datasetPb from '../gen/app/dataset/v1/dataset_pb.js';
export * as dataSyncPb from '../gen/app/datasync/v1/data_sync_pb.js';
export * as mlTrainingPb from '../gen/app/mltraining/v1/ml_training_pb.js';
export * as packagesPb from '../gen/app/packages/v1/packages_pb.js';
export * as appPb from '../gen/app/v1/app_pb.js';
export * as billingPb from '../gen/app/v1/billing_pb.js';
export * as endUserPb from '../gen/app/v1/end_user_pb.js';
/** viam.app.v1.RobotService (the cloud side of a machine: config, logs, certificates). */
export * as robotPb from '../gen/app/v1/robot_pb.js';
export * as commonPb from '../gen/common/v1/common_pb.js';
export * as cameraPb from '../gen/component/camera/v1/camera_pb.js';
export * as genericPb from '../gen/component/generic/v1/generic_pb.js';
export * as motorPb from '../gen/component/motor/v1/motor_pb.js';
export * as sensorPb from '../gen/component/sensor/v1/sensor_pb.js';
/** grpc.reflection.v1 and v1alpha (proto-extra/): server reflection, served by modules. */
export * as reflectionPb from '../gen/grpc/reflection/v1/reflection_pb.js';
export * as reflectionV1alphaPb from '../gen/grpc/reflection/v1alpha/reflection_pb.js';
/**
 * mcloud.datasync.v1.RawDataCaptureUploadRequest: DataCaptureUploadRequest with each SensorData left
 * encoded (wire-identical), for the cloud's tabular ingest hot path.
 */
export * as rawDataSyncPb from '../gen/mcloud/datasync/v1/raw_data_capture_upload_pb.js';
/**
 * mcloud.machine.v1.MachineConnectionService: Machine Cloud's own live stream between a connected
 * machine-server and the cloud (heartbeats, "config changed", "restart requested"); semantics in
 * proto-own/mcloud/machine/v1/machine_connection.proto.
 */
export * as machineConnectionPb from '../gen/mcloud/machine/v1/machine_connection_pb.js';
/**
 * mcloud.triggers.v1.TriggerDeliveryService: Machine Cloud's own listing and redelivery of trigger
 * deliveries (webhooks and emails), semantics in proto-own/mcloud/triggers/v1/trigger_deliveries.proto.
 */
export * as triggerDeliveriesPb from '../gen/mcloud/triggers/v1/trigger_deliveries_pb.js';
/** viam.module.v1.ModuleService: parent ⇄ module protocol (proto-extra/module/v1/module.proto). */
export * as modulePb from '../gen/module/v1/module_pb.js';
export * as authPb from '../gen/proto/rpc/v1/auth_pb.js';
export * as signalingPb from '../gen/proto/rpc/webrtc/v1/signaling_pb.js';
export * as provisioningPb from '../gen/provisioning/v1/provisioning_pb.js';
/** viam.robot.v1.RobotService: the machine API (served by a machine-server, also to its modules). */
export * as machineRobotPb from '../gen/robot/v1/robot_pb.js';
/** viam.service.datamanager.v1.DataManagerService (Sync, UploadBinaryDataToDatasets on the machine API). */
export * as dataManagerPb from '../gen/service/datamanager/v1/data_manager_pb.js';
/** viam.service.generic.v1.GenericService (the generic service API; `genericPb` is the component one). */
export * as genericServicePb from '../gen/service/generic/v1/generic_pb.js';
