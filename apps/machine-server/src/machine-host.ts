/**
 * Where the other parts of the machine-server attach (ms-api, ms-modules, ms-data, ms-logging).
 * `startMachineServer` (machine-server.ts) owns the lifecycle and calls these hooks; each engineer
 * implements one and adds its factory to `createDefaultExtensions` (machine-extensions.ts).
 *
 * Order at start-up: logging → config load → cloud connection → extensions' `start` (register models,
 * open servers) → first reconfigure pass → ready. On stop: extensions' `stop` (reverse order, the web
 * server first) → resources closed dependents-first → module reconciler `close` → logging `close`.
 */

import type { Clock } from './clock.ts';
import type { CloudConnection } from './cloud/cloud-connection.ts';
import type { ConfigDiff } from './config/config-diff.ts';
import type { MachineConfig, ModuleConfig } from './config/machine-config.ts';
import type { DiagnosticsTuning } from './diagnostics/diagnostics-tuning.ts';
import type { Logger } from './logging/logger.ts';
import type { ModelRegistry } from './resources/model-registry.ts';
import type { Resource } from './resources/resource.ts';
import type { Api, ResourceName } from './resources/resource-name.ts';

/** The command-line options parsed by the bin (see cli/machine-server-options.ts). */
export interface MachineServerOptions {
  readonly configPath: string;
  readonly debug: boolean;
  readonly logFile?: string;
  readonly disableMdns: boolean;
  readonly noTls: boolean;
  readonly allowInsecureCreds: boolean;
  readonly webrtc: boolean;
  readonly webProfile: boolean;
  readonly untrustedEnv: boolean;
  readonly revealSensitiveConfigDiffs: boolean;
  readonly outputTelemetry: boolean;
  readonly ftdc: boolean;
  /** FTDC and -output-telemetry intervals and limits (default: the spec's; env `MCLOUD_FTDC_*`). */
  readonly diagnostics?: DiagnosticsTuning;
  readonly cpuProfile?: string;
  readonly sharedDir?: string;
  /** `$VIAM_HOME` (default `~/.viam`): cache, module data, capture dir, diagnostics. */
  readonly viamHome: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Node states of machine-runtime.md A2.3. */
export type ResourceState = 'unconfigured' | 'configuring' | 'ready' | 'unhealthy' | 'removing';

export interface ResourceStatus {
  readonly name: ResourceName;
  readonly state: ResourceState;
  readonly lastUpdated: Date;
  /** Config revision last successfully applied. */
  readonly revision: string;
  /** Why it is unhealthy (unknown model, cycle, duplicate name, build error, unresolved deps). */
  readonly error?: string;
}

export interface MachineStatus {
  readonly state: 'initializing' | 'running';
  readonly config: { readonly revision: string; readonly lastUpdated: Date };
  readonly resources: readonly ResourceStatus[];
}

export interface CloudMetadata {
  readonly primaryOrgId: string;
  readonly locationId: string;
  readonly machineId: string;
  readonly machinePartId: string;
}

export interface RestartStatus {
  /** Not reconfiguring right now AND the maintenance sensor allows it (A8). */
  readonly restartAllowed: boolean;
  readonly doesNotHandleNeedsRestart: true;
}

/** Read access to the live resources, for the machine API and modules' parent server. */
export interface ResourceLookup {
  /** Names of every reachable (ready) resource. */
  names(): ResourceName[];
  /** A ready resource by full name; undefined when absent or unhealthy. */
  get(name: ResourceName): Resource | undefined;
  /**
   * A ready resource of `api` by short name (`name` or `remote:name`); throws NotFound, or
   * FailedPrecondition when the name is ambiguous.
   */
  findByShortName(api: Api, name: string): Resource;
}

/** What the running machine offers to extensions. */
export interface MachineHost {
  readonly options: MachineServerOptions;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly registry: ModelRegistry;
  readonly resources: ResourceLookup;
  /** The cloud connection when cloud-managed (credentials in the config file), else undefined. */
  readonly cloud: CloudConnection | undefined;
  /** The config currently applied (last one that parsed and validated). */
  currentConfig(): MachineConfig;
  status(): MachineStatus;
  cloudMetadata(): CloudMetadata;
  /** For `/restart_status` (A8); reads the maintenance sensor (bounded by 5 s). */
  restartStatus(signal: AbortSignal): Promise<RestartStatus>;
  /** Calls `stop` on every actuator (StopAll). */
  stopAll(signal: AbortSignal): Promise<void>;
  /** Asks for a clean shutdown (Shutdown RPC, NeedsRestart); returns at once. */
  requestShutdown(reason: string): void;
  /** Marks resources for rebuild and runs a pass soon (e.g. a module came back). */
  requestRebuild(names: readonly ResourceName[]): void;
  /** Runs the retry pass soon (e.g. a module registered new models). */
  requestReconfigure(): void;
  /** `RestartModule`: restarts a module and rebuilds its resources; absent without modules. (ms-modules) */
  restartModule?(target: ModuleTarget, signal: AbortSignal): Promise<void>;
  version(): { version: string; gitRevision: string; apiVersion: string };
}

/** A part that plugs into the machine-server lifecycle (web server, data manager, …). */
export interface MachineExtension {
  readonly name: string;
  /**
   * Registers the extension's built-in models (e.g. the data manager). Called once, before `start`,
   * and also by `-dump-resources` (no host then), so it must not start anything.
   */
  registerModels?(registry: ModelRegistry): void;
  /** Extra numeric metrics for FTDC / -output-telemetry (e.g. module process CPU and memory). */
  diagnostics?(): Record<string, number>;
  /** Before the first reconfigure: register models, open listeners. */
  start?(host: MachineHost, signal: AbortSignal): Promise<void>;
  /** After every applied config (including the first), with its diff. */
  configApplied?(config: MachineConfig, diff: ConfigDiff, signal: AbortSignal): Promise<void>;
  /** At shutdown, in reverse start order, before resources are closed. */
  stop?(signal: AbortSignal): Promise<void>;
}

/**
 * The module manager's part of a reconfigure pass (A2.4 steps 4, 5 and 10), implemented by ms-modules.
 * `prepare` runs before any resource change (download/first-run; a throw aborts the whole pass);
 * `apply` starts added modules, restarts modified ones, stops removed ones, and returns the resources
 * that must be rebuilt because their module restarted. Models are (un)registered in the registry.
 */
export interface ModuleReconciler {
  prepare(diff: ModuleDiff, signal: AbortSignal): Promise<void>;
  apply(diff: ModuleDiff, signal: AbortSignal): Promise<{ rebuild: readonly ResourceName[] }>;
  /** Stops every module (SIGTERM, then SIGKILL); called after resources are closed at shutdown. */
  close(signal: AbortSignal): Promise<void>;
  /**
   * `RestartModule` (A7.5): stops and starts one module by `module_id` or name; returns the resources it
   * served, to rebuild. NotFound when no running module matches. (ms-modules)
   */
  restart?(target: ModuleTarget, signal: AbortSignal): Promise<{ rebuild: readonly ResourceName[] }>;
}

/** A module named by its registry `module_id` or its configured `name`. */
export type ModuleTarget = { readonly moduleId: string } | { readonly moduleName: string };

export interface ModuleDiff {
  readonly added: readonly ModuleConfig[];
  readonly modified: readonly ModuleConfig[];
  readonly removed: readonly ModuleConfig[];
  readonly config: MachineConfig;
}

/**
 * Logging set-up, implemented by ms-logging (the default is a console logger at info/debug).
 * `applyConfig` gets the `log` patterns, `debug`, `disable_log_deduplication`, resources'
 * `log_configuration` and modules' `log_level` of every applied config.
 */
export interface MachineLogging {
  /** The root logger `rdk`. */
  readonly logger: Logger;
  applyConfig(config: MachineConfig): void;
  /** Starts uploading logs to the cloud (RobotService.Log) once the connection exists. */
  attachCloud(connection: CloudConnection, partId: string): void;
  close(signal: AbortSignal): Promise<void>;
}
