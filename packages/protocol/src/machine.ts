/**
 * The part of the wire schema a machine-server, its modules and the module SDK use: the machine API,
 * the components and services served on it, the module protocol, and the cloud services a machine
 * calls (config, logs, data sync, its live stream). A narrower entry point than `index.ts` so that a
 * machine does not load (and keep in memory) the descriptors of the cloud's own APIs, `app_pb` above
 * all: 20 generated files instead of 34 (163 instead of 380 KiB), ~3.4 MiB less idle RSS (bench/README.md).
 */
export * as dataPb from '../gen/app/data/v1/data_pb.js';
export * as dataSyncPb from '../gen/app/datasync/v1/data_sync_pb.js';
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
 * mcloud.machine.v1.MachineConnectionService: Machine Cloud's own live stream between a connected
 * machine-server and the cloud (heartbeats, "config changed", "restart requested"); semantics in
 * proto-own/mcloud/machine/v1/machine_connection.proto.
 */
export * as machineConnectionPb from '../gen/mcloud/machine/v1/machine_connection_pb.js';
/** viam.module.v1.ModuleService: parent ⇄ module protocol (proto-extra/module/v1/module.proto). */
export * as modulePb from '../gen/module/v1/module_pb.js';
export * as authPb from '../gen/proto/rpc/v1/auth_pb.js';
/** viam.robot.v1.RobotService: the machine API (served by a machine-server, also to its modules). */
export * as machineRobotPb from '../gen/robot/v1/robot_pb.js';
/** viam.service.datamanager.v1.DataManagerService (Sync, UploadBinaryDataToDatasets on the machine API). */
export * as dataManagerPb from '../gen/service/datamanager/v1/data_manager_pb.js';
/** viam.service.generic.v1.GenericService (the generic service API; `genericPb` is the component one). */
export * as genericServicePb from '../gen/service/generic/v1/generic_pb.js';
