/**
 * Public surface of the machine-server for the other workspaces and for its own parts
 * (api/, modules/, data/, logging/). Deep imports of src/ from other packages are not allowed.
 */

export type { Clock } from './clock.ts';
export { systemClock } from './clock.ts';
export {
  type CloudConnection,
  type CloudConnectionOptions,
  createCloudConnection,
} from './cloud/cloud-connection.ts';
export { authenticateFields, type CloudCredentials } from './cloud/cloud-credentials.ts';
export { type CategoryDiff, type ConfigDiff, diffConfigs, isEmptyDiff } from './config/config-diff.ts';
export {
  type AuthHandler,
  type AuthSection,
  allResourceConfigs,
  apiKeysFromAuth,
  type CloudSection,
  defaultBindAddress,
  type LocationSecret,
  type LogPatternConfig,
  type MachineConfig,
  type MaintenanceConfig,
  type ModuleConfig,
  type NetworkSection,
  type PackageConfig,
  parseMachineConfig,
  parseMachineConfigText,
} from './config/machine-config.ts';
export {
  type ErrorCode,
  errorMessage,
  invalidConfig,
  isMachineError,
  MachineError,
  notFound,
  unimplemented,
} from './errors.ts';
export { isJsonObject, type JsonObject, type JsonValue } from './json.ts';
export {
  createConsoleLogger,
  createSilentLogger,
  type LogFields,
  type Logger,
  type LogLevel,
  levelAtLeast,
  logLevels,
  parseLogLevel,
} from './logging/logger.ts';
export type {
  CloudMetadata,
  MachineExtension,
  MachineHost,
  MachineLogging,
  MachineServerOptions,
  MachineStatus,
  ModuleDiff,
  ModuleReconciler,
  ModuleTarget,
  ResourceLookup,
  ResourceState,
  ResourceStatus,
  RestartStatus,
} from './machine-host.ts';
export {
  type Camera,
  type CameraImage,
  type CameraImages,
  type CameraProperties,
  cameraApi,
  isCamera,
  mimeJpeg,
  mimePng,
} from './resources/apis/camera.ts';
export { type Generic, genericComponentApi, genericServiceApi, isGeneric } from './resources/apis/generic.ts';
export { isMotor, type Motor, motorApi } from './resources/apis/motor.ts';
export { isSensor, type Readings, type Sensor, sensorApi } from './resources/apis/sensor.ts';
export { createDependencies, type Dependencies } from './resources/dependencies.ts';
export {
  type BuildContext,
  createModelRegistry,
  type ModelRegistration,
  type ModelRegistry,
  noDependencies,
  type RegistryChange,
  type ValidatedDependencies,
  type WeakDependencyMatcher,
} from './resources/model-registry.ts';
export { type Actuator, type CallOptions, isActuator, type Resource } from './resources/resource.ts';
export {
  type AssociatedConfig,
  parseResourceConfig,
  type ResourceConfig,
  resourceConfigToJson,
} from './resources/resource-config.ts';
export {
  type Api,
  apiEquals,
  builtinModel,
  componentApi,
  createApi,
  createModel,
  createResourceName,
  formatApi,
  formatModel,
  formatResourceName,
  isFullResourceName,
  type Model,
  modelEquals,
  parseApi,
  parseModel,
  parseResourceName,
  type ResourceName,
  resourceNameEquals,
  serviceApi,
  shortName,
} from './resources/resource-name.ts';
