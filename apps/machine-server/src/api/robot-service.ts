import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { commonPb, machineRobotPb } from '@mcloud/protocol/machine';
import { MachineError } from '../errors.ts';
import type { MachineHost, ResourceState } from '../machine-host.ts';
import { formatApi, formatModel, type ResourceName, shortName } from '../resources/resource-name.ts';
import type { LogIngest } from './module-log-ingest.ts';
import type { Operations } from './operations.ts';
import type { Sessions } from './sessions.ts';

export interface RobotServiceDeps {
  readonly host: MachineHost;
  readonly operations: Operations;
  readonly sessions: Sessions;
  readonly ingestLogs: LogIngest;
}

const stateOf: Record<ResourceState, machineRobotPb.ResourceStatus_State> = {
  unconfigured: machineRobotPb.ResourceStatus_State.UNCONFIGURED,
  configuring: machineRobotPb.ResourceStatus_State.CONFIGURING,
  ready: machineRobotPb.ResourceStatus_State.READY,
  unhealthy: machineRobotPb.ResourceStatus_State.UNHEALTHY,
  removing: machineRobotPb.ResourceStatus_State.REMOVING,
};

/** The gRPC services of the APIs the machine-server serves itself (ResourceRPCSubtypes). */
const protoServiceOfApi: Record<string, string> = {
  'rdk:component:sensor': 'viam.component.sensor.v1.SensorService',
  'rdk:component:camera': 'viam.component.camera.v1.CameraService',
  'rdk:component:motor': 'viam.component.motor.v1.MotorService',
  'rdk:component:generic': 'viam.component.generic.v1.GenericService',
  'rdk:service:generic': 'viam.service.generic.v1.GenericService',
};

const maxLogEntries = 1000;

/**
 * `viam.robot.v1.RobotService` (machine-runtime.md A7.5). Frame system, tunnels, traces, module restarts
 * and the deprecated status RPCs are not implemented and answer Unimplemented.
 */
export function robotServiceHandlers(
  deps: RobotServiceDeps,
): Partial<ServiceImpl<typeof machineRobotPb.RobotService>> {
  const { host, operations, sessions } = deps;
  return {
    resourceNames() {
      return { resources: host.resources.names().map(resourceNameToProto) };
    },
    resourceRPCSubtypes() {
      const seen = new Map<string, ResourceName>();
      for (const name of host.resources.names()) seen.set(formatApi(name.api), name);
      const subtypes = [...seen].flatMap(([api, name]) => {
        const protoService = protoServiceOfApi[api];
        return protoService ? [{ subtype: { ...resourceNameToProto(name), name: '' }, protoService }] : [];
      });
      return { resourceRpcSubtypes: subtypes };
    },
    getOperations() {
      return {
        operations: operations.list().map((operation) => ({
          id: operation.id,
          method: operation.method,
          started: timestampFromDate(operation.started),
          ...(operation.sessionId ? { sessionId: operation.sessionId } : {}),
        })),
      };
    },
    cancelOperation(request) {
      operations.cancel(request.id);
      return {};
    },
    async blockForOperation(request, context) {
      await operations.blockFor(request.id, context.signal);
      return {};
    },
    getSessions() {
      return {
        sessions: sessions.list().map((session) => ({
          id: session.id,
          peerConnectionInfo: {
            type: machineRobotPb.PeerConnectionType.GRPC,
            ...(session.remoteAddress ? { remoteAddress: session.remoteAddress } : {}),
          },
        })),
      };
    },
    startSession(request) {
      const session = sessions.start(request.resume, undefined);
      return { id: session.id, heartbeatWindow: durationFromMs(session.heartbeatWindowMs) };
    },
    sendSessionHeartbeat(request) {
      sessions.heartbeat(request.id);
      return {};
    },
    async restartModule(request, context) {
      // ms-modules: by module_id or name; the module's resources are rebuilt by the next pass.
      if (!host.restartModule) throw new MachineError('Unimplemented', 'this machine-server runs no modules');
      const target = request.idOrName;
      if (target.case === 'moduleId' && target.value !== '')
        await host.restartModule({ moduleId: target.value }, context.signal);
      else if (target.case === 'moduleName' && target.value !== '')
        await host.restartModule({ moduleName: target.value }, context.signal);
      else throw new MachineError('InvalidArgument', 'module_id or module_name is required');
      return {};
    },
    getModelsFromModules() {
      const modules = new Map(host.currentConfig().modules.map((module) => [module.name, module]));
      return {
        models: host.registry
          .list()
          .filter((registration) => registration.source !== 'builtin')
          .map((registration) => ({
            moduleName: registration.source,
            model: formatModel(registration.model),
            api: formatApi(registration.api),
            fromLocalModule: modules.get(registration.source)?.type === 'local',
          })),
      };
    },
    async stopAll(_request, context) {
      await host.stopAll(context.signal);
      return {};
    },
    log(request) {
      if (request.logs.length > maxLogEntries) {
        throw new MachineError(
          'InvalidArgument',
          `logs has ${request.logs.length} entries; the limit is ${maxLogEntries} per request`,
        );
      }
      deps.ingestLogs(
        request.logs.map((entry) => ({
          loggerName: entry.loggerName,
          level: entry.level,
          message: entry.message,
          fields: entry.fields,
          ...(entry.time ? { time: timestampDate(entry.time) } : {}),
        })),
      );
      return {};
    },
    getCloudMetadata() {
      const metadata = host.cloudMetadata();
      return { ...metadata, robotPartId: metadata.machinePartId };
    },
    shutdown() {
      host.requestShutdown('shutdown_request');
      return {};
    },
    getMachineStatus() {
      const status = host.status();
      return {
        state:
          status.state === 'running'
            ? machineRobotPb.GetMachineStatusResponse_State.RUNNING
            : machineRobotPb.GetMachineStatusResponse_State.INITIALIZING,
        config: {
          revision: status.config.revision,
          lastUpdated: timestampFromDate(status.config.lastUpdated),
        },
        resources: status.resources.map((resource) => ({
          name: resourceNameToProto(resource.name),
          state: stateOf[resource.state],
          lastUpdated: timestampFromDate(resource.lastUpdated),
          revision: resource.revision,
          error: resource.error ?? '',
        })),
      };
    },
    getVersion() {
      const version = host.version();
      return { platform: goPlatform(), version: version.version, apiVersion: version.apiVersion };
    },
  };
}

export function resourceNameToProto(name: ResourceName): commonPb.ResourceName {
  return create(commonPb.ResourceNameSchema, {
    namespace: name.api.namespace,
    type: name.api.type,
    subtype: name.api.subtype,
    name: shortName(name),
  });
}

/** `GOOS/GOARCH` as viam-server reports it, e.g. `linux/amd64`. */
function goPlatform(): string {
  const arch: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm' };
  return `${process.platform}/${arch[process.arch] ?? process.arch}`;
}
