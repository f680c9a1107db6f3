/**
 * Registers the data manager (`rdk:service:data_manager`, model `rdk:builtin:builtin`) as a built-in
 * model. It depends weakly on every component (and on vision/slam services), so it is built after them
 * and rebuilt when they change; the capture methods come from each resource's
 * `service_configs[type=data_manager]` in the applied configuration. When only those capture configs
 * change, the extension asks the host to rebuild the data manager.
 */
import { createClient } from '@connectrpc/connect';
import { dataSyncPb } from '@mcloud/protocol/machine';
import type { MachineConfig } from '../config/machine-config.ts';
import { allResourceConfigs } from '../config/machine-config.ts';
import { errorMessage } from '../errors.ts';
import type { MachineExtension, MachineHost } from '../machine-host.ts';
import { type ModelRegistration, noDependencies } from '../resources/model-registry.ts';
import type { ResourceConfig } from '../resources/resource-config.ts';
import { builtinModel, formatResourceName, type ResourceName } from '../resources/resource-name.ts';
import type { UploadTarget } from './capture-file-upload.ts';
import { type CaptureMethodConfig, parseCaptureMethods } from './capture-method-config.ts';
import { type CaptureTarget, type DataManagerOptions, startDataManager } from './data-manager.ts';
import { dataManagerApi } from './data-manager-api.ts';
import { parseDataManagerConfig, unknownDataManagerKeys } from './data-manager-config.ts';

export const dataManagerModel = builtinModel('builtin');

/** Options for tests: faster backoff and deletion checks than the reference defaults. */
export type DataManagerTuning = Pick<
  DataManagerOptions,
  'backoff' | 'deletionCheckIntervalMs' | 'fileSystemUsage'
>;

const attributeSchema = {
  type: 'object',
  properties: {
    capture_dir: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
    capture_disabled: { type: 'boolean' },
    sync_disabled: { type: 'boolean' },
    sync_interval_mins: { type: 'number', minimum: 0 },
    additional_sync_paths: { type: 'array', items: { type: 'string' } },
    file_last_modified_millis: { type: 'integer', minimum: 0 },
    maximum_num_sync_threads: { type: 'integer', minimum: 0 },
    maximum_capture_file_size_bytes: { type: 'integer', minimum: 0 },
    delete_every_nth_when_disk_full: { type: 'integer', minimum: 0 },
    disk_usage_deletion_threshold: { type: 'number', minimum: 0, maximum: 1 },
    capture_dir_deletion_threshold: { type: 'number', minimum: 0, maximum: 1 },
    selective_syncer_name: { type: 'string' },
    mongo_capture_config: { type: 'object' },
    capture_control_sensor: {
      type: 'object',
      properties: { name: { type: 'string' }, key: { type: 'string' } },
    },
  },
} as const;

/** Capture methods configured on each resource of `config`, keyed by full resource name. */
export function captureConfigsOf(
  config: MachineConfig,
  onError: (resource: ResourceConfig, error: unknown) => void,
): Map<string, { resource: ResourceConfig; methods: CaptureMethodConfig[] }> {
  const result = new Map<string, { resource: ResourceConfig; methods: CaptureMethodConfig[] }>();
  for (const resource of allResourceConfigs(config)) {
    if (resource.serviceConfigs.length === 0) continue;
    try {
      const methods = parseCaptureMethods(resource.serviceConfigs, resource.path);
      if (methods.length > 0) result.set(formatResourceName(resource.resourceName), { resource, methods });
    } catch (error) {
      onError(resource, error);
    }
  }
  return result;
}

function captureSnapshot(config: MachineConfig): string {
  const entries = [...captureConfigsOf(config, () => {}).entries()].map(([name, entry]) => [
    name,
    entry.methods.map(({ path: _path, ...method }) => method),
  ]);
  return JSON.stringify(entries.sort());
}

/** The DataSyncService client on the machine's cloud connection (also used by FTDC uploads). */
export function uploadTargetOf(host: Pick<MachineHost, 'cloud'>): () => UploadTarget | undefined {
  const cloud = host.cloud;
  if (!cloud) return () => undefined;
  const target: UploadTarget = {
    client: createClient(dataSyncPb.DataSyncService, cloud.transport),
    partId: cloud.partId,
  };
  return () => target;
}

export function dataManagerRegistration(
  host: MachineHost,
  tuning: DataManagerTuning = {},
  onBuilt: (name: ResourceName, snapshot: string) => void = () => {},
): ModelRegistration {
  const context = { viamHome: host.options.viamHome, untrustedEnv: host.options.untrustedEnv };
  const cloudTarget = uploadTargetOf(host);
  return {
    api: dataManagerApi,
    model: dataManagerModel,
    attributeSchema,
    source: 'builtin',
    weakDependencies: [
      (name) => name.api.type === 'component',
      (name) => name.api.type === 'service' && (name.api.subtype === 'vision' || name.api.subtype === 'slam'),
    ],
    validate(config) {
      parseDataManagerConfig(config.attributes, `${config.path}.attributes`, context);
      return noDependencies;
    },
    async build({ config, dependencies, logger }) {
      const serviceConfig = parseDataManagerConfig(config.attributes, `${config.path}.attributes`, context);
      for (const key of unknownDataManagerKeys(config.attributes)) {
        logger.warn(`${config.path}.attributes.${key}: unknown data manager attribute (ignored)`);
      }
      const machineConfig = host.currentConfig();
      const captureConfigs = captureConfigsOf(machineConfig, (resource, error) => {
        logger.error(`capture configuration of ${resource.name} ignored: ${errorMessage(error)}`);
      });
      const targets: CaptureTarget[] = [];
      for (const [fullName, entry] of captureConfigs) {
        const resource = dependencies.all.get(fullName);
        if (!resource) {
          logger.warn('not capturing from a resource that is not available', { resource: fullName });
          continue;
        }
        targets.push({ resource, methods: entry.methods });
      }
      const manager = await startDataManager({
        name: config.resourceName,
        config: serviceConfig,
        targets,
        resources: [...dependencies.all.values()],
        cloud: cloudTarget,
        logger,
        clock: host.clock,
        ...tuning,
      });
      onBuilt(config.resourceName, captureSnapshot(machineConfig));
      return manager;
    },
  };
}

/**
 * The machine-server extension: registers the model at start-up; after every applied config, rebuilds
 * data managers whose capture configuration (on other resources) changed since they were built.
 */
export function createDataManagerExtension(tuning: DataManagerTuning = {}): MachineExtension {
  let host: MachineHost | undefined;
  const builtWith = new Map<string, { name: ResourceName; snapshot: string }>();
  return {
    name: 'data-manager',
    async start(machine) {
      host = machine;
      machine.registry.register(
        dataManagerRegistration(machine, tuning, (name, snapshot) => {
          builtWith.set(formatResourceName(name), { name, snapshot });
        }),
      );
    },
    async configApplied(config) {
      if (!host) return;
      const snapshot = captureSnapshot(config);
      const stale: ResourceName[] = [];
      const present = new Set(config.services.map((service) => formatResourceName(service.resourceName)));
      for (const [key, built] of builtWith) {
        if (!present.has(key)) builtWith.delete(key);
        else if (built.snapshot !== snapshot) stale.push(built.name);
      }
      if (stale.length > 0) host.requestRebuild(stale);
    },
  };
}
