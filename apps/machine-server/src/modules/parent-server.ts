/**
 * The module parent server (machine-runtime.md A3.2, A7.5, appendix §3): local and unauthenticated,
 * on `<socket dir>/parent.sock` (unless `VIAM_TCP_SOCKETS`) and always on `127.0.0.1:<port>`. It serves
 * the machine API's component services (ms-api's `registerComponentServices`: sensor, camera, motor,
 * generic) over the machine's resources, so modules reach other resources (built in or in other
 * modules), and the part of `viam.robot.v1.RobotService` modules use: ResourceNames,
 * ResourceRPCSubtypes, Log (exactly one entry per call) and GetCloudMetadata; the rest Unimplemented.
 */
import type { ConnectRouter } from '@connectrpc/connect';
import { type SocketServer, startSocketServer } from '@mcloud/module-sdk';
import { machineRobotPb } from '@mcloud/protocol/machine';
import { registerComponentServices } from '../api/components/component-services.ts';
import { createErrorInterceptor } from '../api/error-interceptor.ts';
import { resourceNameToProto } from '../api/robot-service.ts';
import type { Clock } from '../clock.ts';
import { errorMessage, MachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { CloudMetadata, ResourceLookup } from '../machine-host.ts';
import { formatApi } from '../resources/resource-name.ts';
import { emitModuleLog } from './module-log.ts';

export interface ParentServerOptions {
  readonly resources: ResourceLookup;
  /** `rdk.modmanager`: failures of calls are reported here. */
  readonly logger: Logger;
  readonly clock: Clock;
  cloudMetadata(): CloudMetadata | undefined;
  /** Unix socket path; undefined when `VIAM_TCP_SOCKETS` is set. */
  readonly socketPath: string | undefined;
}

export interface ParentServer {
  /** The unix socket path, or the TCP address when there is no unix server. */
  readonly address: string;
  /** `127.0.0.1:<port>` (`module_server_tcp_addr` of /restart_status). */
  readonly tcpAddress: string;
  close(): Promise<void>;
}

/** The gRPC services registerComponentServices serves, by API. */
const protoServiceOfApi: Record<string, string> = {
  'rdk:component:sensor': 'viam.component.sensor.v1.SensorService',
  'rdk:component:camera': 'viam.component.camera.v1.CameraService',
  'rdk:component:motor': 'viam.component.motor.v1.MotorService',
  'rdk:component:generic': 'viam.component.generic.v1.GenericService',
  'rdk:service:generic': 'viam.service.generic.v1.GenericService',
};

export async function startParentServer(options: ParentServerOptions): Promise<ParentServer> {
  const routes = (router: ConnectRouter) => registerParentServices(router, options);
  const interceptors = [
    createErrorInterceptor((error, procedure) =>
      options.logger.warn('module call to the parent failed', { procedure, error: errorMessage(error) }),
    ),
  ];
  const servers: SocketServer[] = [];
  try {
    const tcp = await startSocketServer({ address: '127.0.0.1:0', routes, interceptors });
    servers.push(tcp);
    const unix = options.socketPath
      ? await startSocketServer({ address: options.socketPath, routes, interceptors })
      : undefined;
    if (unix) servers.push(unix);
    return {
      address: unix?.address ?? tcp.address,
      tcpAddress: tcp.address,
      close: async () => {
        await Promise.all(servers.map((server) => server.close()));
      },
    };
  } catch (error) {
    await Promise.all(servers.map((server) => server.close()));
    throw error;
  }
}

function registerParentServices(router: ConnectRouter, options: ParentServerOptions): void {
  const { resources } = options;
  router.service(machineRobotPb.RobotService, {
    resourceNames: () => ({ resources: resources.names().map(resourceNameToProto) }),
    resourceRPCSubtypes() {
      const apis = new Map(resources.names().map((name) => [formatApi(name.api), name]));
      return {
        resourceRpcSubtypes: [...apis].flatMap(([api, name]) => {
          const protoService = protoServiceOfApi[api];
          return protoService ? [{ subtype: { ...resourceNameToProto(name), name: '' }, protoService }] : [];
        }),
      };
    },
    log(request, context) {
      emitModuleLog(options.logger, context.requestHeader.get('modname'), request.logs, options.clock.now());
      return {};
    },
    getCloudMetadata() {
      const metadata = options.cloudMetadata();
      if (!metadata) throw new MachineError('FailedPrecondition', 'this machine is not cloud-managed');
      return metadata;
    },
  });
  registerComponentServices(router, (api, name) => resources.findByShortName(api, name));
}
