import { tmpdir } from 'node:os';
import { systemClock } from '../../../src/clock.ts';
import { type MachineConfig, parseMachineConfig } from '../../../src/config/machine-config.ts';
import { MachineError } from '../../../src/errors.ts';
import { createSilentLogger, type Logger } from '../../../src/logging/logger.ts';
import type {
  MachineHost,
  MachineServerOptions,
  ResourceStatus,
  RestartStatus,
} from '../../../src/machine-host.ts';
import { createModelRegistry } from '../../../src/resources/model-registry.ts';
import { isActuator, type Resource } from '../../../src/resources/resource.ts';
import {
  apiEquals,
  formatResourceName,
  type ResourceName,
  shortName,
} from '../../../src/resources/resource-name.ts';

export interface FakeMachineHost extends MachineHost {
  setConfig(config: MachineConfig): void;
  setRestartAllowed(allowed: boolean): void;
  readonly shutdownRequests: string[];
}

export interface FakeMachineHostOptions {
  config: unknown;
  resources: Resource[];
  /** Resources that failed to build (unhealthy, with a reason). */
  unhealthy?: { name: ResourceName; error: string }[];
  options?: Partial<MachineServerOptions>;
  logger?: Logger;
}

/** A MachineHost over hand-built resources, until tests run against the real resource graph. */
export function createFakeMachineHost(options: FakeMachineHostOptions): FakeMachineHost {
  let config = parseMachineConfig(options.config, {
    source: 'cloud' in (options.config as object) ? 'cloud' : 'local',
  });
  let restartAllowed = true;
  const started = new Date();
  const shutdownRequests: string[] = [];
  const byName = new Map(options.resources.map((resource) => [formatResourceName(resource.name), resource]));
  const statuses = (): ResourceStatus[] => [
    ...options.resources.map((resource) => ({
      name: resource.name,
      state: 'ready' as const,
      lastUpdated: started,
      revision: config.revision,
    })),
    ...(options.unhealthy ?? []).map(({ name, error }) => ({
      name,
      state: 'unhealthy' as const,
      lastUpdated: started,
      revision: '',
      error,
    })),
  ];
  const serverOptions: MachineServerOptions = {
    configPath: '/dev/null',
    debug: false,
    disableMdns: true,
    noTls: false,
    allowInsecureCreds: false,
    webrtc: false,
    webProfile: false,
    untrustedEnv: false,
    revealSensitiveConfigDiffs: false,
    outputTelemetry: false,
    ftdc: false,
    viamHome: tmpdir(),
    env: {},
    ...options.options,
  };
  return {
    options: serverOptions,
    logger: options.logger ?? createSilentLogger(),
    clock: systemClock,
    registry: createModelRegistry(),
    cloud: undefined,
    resources: {
      names: () => options.resources.map((resource) => resource.name),
      get: (name) => byName.get(formatResourceName(name)),
      findByShortName(api, name) {
        const found = options.resources.find(
          (resource) => apiEquals(resource.name.api, api) && shortName(resource.name) === name,
        );
        if (!found) throw new MachineError('NotFound', `resource ${JSON.stringify(name)} not found`);
        return found;
      },
    },
    currentConfig: () => config,
    status: () => ({
      state: 'running',
      config: { revision: config.revision, lastUpdated: started },
      resources: statuses(),
    }),
    cloudMetadata: () => ({
      primaryOrgId: config.cloud?.primaryOrgId ?? '',
      locationId: config.cloud?.locationId ?? '',
      machineId: config.cloud?.machineId ?? '',
      machinePartId: config.cloud?.id ?? '',
    }),
    restartStatus: async (): Promise<RestartStatus> => ({ restartAllowed, doesNotHandleNeedsRestart: true }),
    async stopAll(signal) {
      for (const resource of options.resources) if (isActuator(resource)) await resource.stop({ signal });
    },
    requestShutdown: (reason) => {
      shutdownRequests.push(reason);
    },
    requestRebuild: () => {},
    requestReconfigure: () => {},
    version: () => ({ version: '0.1.0-test', gitRevision: 'abc', apiVersion: 'v0.1.512' }),
    setConfig: (next) => {
      config = next;
    },
    setRestartAllowed: (allowed) => {
      restartAllowed = allowed;
    },
    shutdownRequests,
  };
}
