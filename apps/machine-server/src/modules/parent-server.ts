/**
 * The module parent server (machine-runtime.md A3.2, A7.5, appendix §3): local and unauthenticated,
 * on `<socket dir>/parent.sock` (unless `VIAM_TCP_SOCKETS`) and always on `127.0.0.1:<port>`. It serves
 * `viam.robot.v1.RobotService` (ResourceNames, ResourceRPCSubtypes, Log, GetCloudMetadata; the rest
 * Unimplemented) and the component services of the machine's resources, so modules reach other
 * resources (built in or in other modules) and send their logs.
 *
 * TODO(ms-api): once the machine API's component handlers land in src/api/, register those here
 * instead of the sensor/generic handlers below.
 */
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { jsonToValueMap, type SocketServer, startSocketServer } from '@mcloud/module-sdk';
import { genericPb, machineRobotPb, sensorPb } from '@mcloud/protocol';
import type { Clock } from '../clock.ts';
import { errorMessage, isMachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { CloudMetadata, ResourceLookup } from '../machine-host.ts';
import { genericComponentApi } from '../resources/apis/generic.ts';
import { isSensor, sensorApi } from '../resources/apis/sensor.ts';
import type { Api } from '../resources/resource-name.ts';
import { emitModuleLog } from './module-log.ts';

export interface ParentServerOptions {
  readonly resources: ResourceLookup;
  /** `rdk.modmanager`: module logs are re-emitted below it. */
  readonly logger: Logger;
  readonly clock: Clock;
  cloudMetadata(): CloudMetadata | undefined;
  /** Unix socket path; undefined when `VIAM_TCP_SOCKETS` is set. */
  readonly socketPath: string | undefined;
}

export interface ParentServer {
  /** The unix socket path, or the TCP address when there is no unix server. */
  readonly address: string;
  readonly tcpAddress: string;
  close(): Promise<void>;
}

const services: { api: Api; service: string }[] = [
  { api: sensorApi, service: sensorPb.SensorService.typeName },
  { api: genericComponentApi, service: genericPb.GenericService.typeName },
];

export async function startParentServer(options: ParentServerOptions): Promise<ParentServer> {
  const routes = (router: ConnectRouter) => registerParentServices(router, options);
  const servers: SocketServer[] = [];
  try {
    const tcp = await startSocketServer({ address: '127.0.0.1:0', routes });
    servers.push(tcp);
    const unix = options.socketPath
      ? await startSocketServer({ address: options.socketPath, routes })
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
    resourceNames: guarded(async () => ({
      resources: resources.names().map((name) => ({
        namespace: name.api.namespace,
        type: name.api.type,
        subtype: name.api.subtype,
        name: [...name.remotePath, name.name].join(':'),
      })),
    })),
    resourceRPCSubtypes: guarded(async () => ({
      resourceRpcSubtypes: services.map(({ api, service }) => ({
        subtype: { ...api, name: '' },
        protoService: service,
      })),
    })),
    log: guarded(async (request, context) => {
      emitModuleLog(options.logger, context.requestHeader.get('modname'), request.logs, options.clock.now());
      return {};
    }),
    getCloudMetadata: guarded(async () => {
      const metadata = options.cloudMetadata();
      if (!metadata) throw new ConnectError('this machine is not cloud-managed', Code.FailedPrecondition);
      return metadata;
    }),
  });
  router.service(sensorPb.SensorService, {
    getReadings: guarded(async (request, context) => {
      const resource = resources.findByShortName(sensorApi, request.name);
      if (!isSensor(resource))
        throw new ConnectError(`${request.name} is not a sensor`, Code.FailedPrecondition);
      const readings = await resource.getReadings(callOptions(request.extra, context));
      return { readings: jsonToValueMap(readings) };
    }),
    doCommand: guarded(async (request, context) => ({
      result: await resources
        .findByShortName(sensorApi, request.name)
        .doCommand(request.command ?? {}, { signal: context.signal }),
    })),
  });
  router.service(genericPb.GenericService, {
    doCommand: guarded(async (request, context) => ({
      result: await resources
        .findByShortName(genericComponentApi, request.name)
        .doCommand(request.command ?? {}, { signal: context.signal }),
    })),
  });
}

function callOptions(extra: Record<string, unknown> | undefined, context: HandlerContext) {
  return extra && Object.keys(extra).length > 0
    ? { extra: extra as import('../json.ts').JsonObject, signal: context.signal }
    : { signal: context.signal };
}

function guarded<I, O>(handler: (request: I, context: HandlerContext) => Promise<O>) {
  return async (request: I, context: HandlerContext): Promise<O> => {
    try {
      return await handler(request, context);
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      if (isMachineError(error)) throw new ConnectError(error.message, Code[error.code]);
      throw new ConnectError(errorMessage(error), Code.Unknown);
    }
  };
}
