import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { machineRobotPb } from '@mcloud/protocol/machine';
import { applyCors, type Listener, listen, type RequestHandler } from '@mcloud/rpc-server';
import { allResourceConfigs, type MachineConfig } from '../config/machine-config.ts';
import { errorMessage, isMachineError, MachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { MachineExtension, MachineHost } from '../machine-host.ts';
import { isActuator } from '../resources/resource.ts';
import { type Api, apiEquals, formatResourceName, shortName } from '../resources/resource-name.ts';
import { createAuthInterceptor } from './auth/auth-interceptor.ts';
import { registerAuthService } from './auth/auth-service.ts';
import { type MachineAuthConfig, machineAuthConfig, machineHostNames } from './auth/machine-auth-config.ts';
import { createMachineAuthenticator } from './auth/machine-authenticator.ts';
import { registerComponentServices } from './components/component-services.ts';
import type { ResourceResolver } from './components/resource-calls.ts';
import { createErrorInterceptor } from './error-interceptor.ts';
import { handleHttpRoutes } from './http-routes.ts';
import { type MdnsAdvertiser, startMdnsAdvertiser } from './mdns-advertiser.ts';
import { createLogIngest, type LogIngest } from './module-log-ingest.ts';
import { createOperations } from './operations.ts';
import { robotServiceHandlers } from './robot-service.ts';
import { createSessions, type MonitoredResource } from './sessions.ts';
import {
  allInterfaces,
  isLoopbackHost,
  tlsFiles,
  type WebOptions,
  webOptionsEqual,
  webOptionsFromConfig,
} from './web-options.ts';

/** goutils `rpc.MaxMessageSize`: 32 MiB. */
export const maxMessageBytes = 32 * 1024 * 1024;
const closeDeadlineMs = 5_000;

export interface MachineApiOptions {
  /** mDNS responder UDP port (tests use their own; default 5353). */
  readonly mdnsPort?: number;
  /** `module_server_tcp_addr` of /restart_status (ms-modules, when modules use TCP). */
  readonly moduleServerTcpAddress?: () => string;
  /** Where module logs sent with RobotService.Log go; default: re-logged through the host's logger. */
  readonly ingestLogs?: LogIngest;
}

export interface MachineApiAddress {
  readonly port: number;
  /** `http(s)://<host>:<port>` as clients on this machine dial it (e.g. `http://localhost:8080`). */
  readonly url: string;
}

/** The machine API as a machine-server extension: `start` listens, config changes restart it, `stop` closes. */
export interface MachineApi extends MachineExtension {
  /** The listening address, once started. */
  address(): MachineApiAddress | undefined;
  /** mDNS instance names advertised right now (empty when disabled). */
  mdnsInstances(): readonly string[];
}

interface Running {
  readonly web: WebOptions;
  readonly listener: Listener;
  readonly address: MachineApiAddress;
  mdns: MdnsAdvertiser | undefined;
  mdnsKey: string;
}

/**
 * One port for everything (machine-runtime.md A7): gRPC (h2c or TLS h2), gRPC-web and Connect for
 * `viam.robot.v1.RobotService`, the component services and `proto.rpc.v1.AuthService`, plus `/` and
 * `/restart_status`; advertised over mDNS unless `-disable-mdns`.
 */
export function createMachineApi(options: MachineApiOptions = {}): MachineApi {
  let host: MachineHost | undefined;
  let logger: Logger | undefined;
  let handler: RequestHandler | undefined;
  let running: Running | undefined;
  let authCache: { config: MachineConfig; port: number; auth: MachineAuthConfig } | undefined;

  const theHost = () => {
    if (!host) throw new MachineError('FailedPrecondition', 'the machine API has not started');
    return host;
  };
  const currentAuthConfig = (): MachineAuthConfig => {
    const config = theHost().currentConfig();
    const port = running?.address.port ?? 0;
    if (authCache?.config !== config || authCache.port !== port) {
      authCache = { config, port, auth: machineAuthConfig(config, port) };
    }
    return authCache.auth;
  };

  function buildHandler(machine: MachineHost, log: Logger): RequestHandler {
    const authenticator = createMachineAuthenticator(currentAuthConfig);
    const operations = createOperations(machine.clock);
    const sessions = createSessions({
      clock: machine.clock,
      heartbeatWindowMs: () => machine.currentConfig().network.heartbeatWindowMs,
      onExpired: (resources, sessionId) => stopActuators(machine, log, resources, sessionId),
    });
    const resolve = createResolver(machine);
    const ingestLogs = options.ingestLogs ?? createLogIngest(machine.logger);
    const connectHandler = connectNodeAdapter({
      routes: (router) => {
        registerAuthService(router, authenticator);
        router.service(
          machineRobotPb.RobotService,
          robotServiceHandlers({ host: machine, operations, sessions, ingestLogs }),
        );
        registerComponentServices(router, resolve);
      },
      interceptors: [
        createErrorInterceptor((error, procedure) =>
          log.error(`${procedure} failed`, { error: errorMessage(error) }),
        ),
        createAuthInterceptor(authenticator, currentAuthConfig),
        sessions.interceptor,
        operations.interceptor,
      ],
      readMaxBytes: maxMessageBytes,
      writeMaxBytes: maxMessageBytes,
      fallback: (req, res) =>
        handleHttpRoutes(
          {
            restartStatus: (signal) => machine.restartStatus(signal),
            moduleServerTcpAddress: options.moduleServerTcpAddress ?? (() => ''),
            webProfile: () => machine.options.webProfile || machine.currentConfig().enableWebProfile,
            graph: () => ({
              status: machine.status(),
              dependsOn: explicitDependencies(machine.currentConfig()),
            }),
            sharedDir: machine.options.sharedDir,
          },
          req,
          res as unknown as ServerResponse,
        ),
    });
    return (req, res) => {
      if (applyCors(req, res)) return;
      connectHandler(req, res);
    };
  }

  async function open(machine: MachineHost, log: Logger, config: MachineConfig): Promise<Running> {
    const web = webOptionsFromConfig(config, { noTls: machine.options.noTls });
    const tls = web.tls ? await tlsFiles(web.tls, path.join(machine.options.viamHome, 'tls')) : undefined;
    const listener = await listen({
      host: web.host,
      port: web.port,
      tls,
      handler: handler as RequestHandler,
    });
    const scheme = tls ? 'https' : 'http';
    const dialHost = web.host === allInterfaces ? 'localhost' : web.host;
    const address = { port: listener.port, url: `${scheme}://${dialHost}:${listener.port}` };
    const started: Running = { web, listener, address, mdns: undefined, mdnsKey: '' };
    const primary = config.cloud?.localFqdn ?? config.network.fqdn ?? dialHost;
    log.info('serving', {
      url: `${scheme}://${primary}:${listener.port}`,
      alt_url: `${scheme}://${web.host}:${listener.port}`,
    });
    if (!isLoopbackHost(web.host) && !machineAuthConfig(config, listener.port).required) {
      log.warn('binding to all interfaces without authentication', {
        bind_address: config.network.bindAddress,
      });
    }
    return started;
  }

  async function advertise(machine: MachineHost, log: Logger, config: MachineConfig, target: Running) {
    if (machine.options.disableMdns) return;
    const names = mdnsHostNames(config);
    const key = JSON.stringify([names, target.address.port]);
    if (target.mdns && target.mdnsKey === key) return;
    await target.mdns?.close();
    target.mdns = undefined;
    try {
      target.mdns = await startMdnsAdvertiser({
        hostNames: names,
        port: target.address.port,
        loopbackOnly: isLoopbackHost(target.web.host),
        logger: log.child('mdns'),
        ...(options.mdnsPort === undefined ? {} : { mdnsPort: options.mdnsPort }),
      });
      target.mdnsKey = key;
    } catch (error) {
      // No multicast on this host is not a reason to refuse serving the API.
      log.warn('mDNS advertisement failed; clients must dial the address directly', {
        error: errorMessage(error),
      });
    }
  }

  async function close(target: Running): Promise<void> {
    await target.mdns?.close();
    await target.listener.close(closeDeadlineMs);
  }

  return {
    name: 'web',
    async start(machine) {
      host = machine;
      logger = machine.logger.child('networking');
      handler = buildHandler(machine, logger);
      const config = machine.currentConfig();
      running = await open(machine, logger, config);
      await advertise(machine, logger, config, running);
    },
    async configApplied(config, diff) {
      if (!host || !logger || !running || diff.networkEqual) return;
      const web = webOptionsFromConfig(config, { noTls: host.options.noTls });
      if (!webOptionsEqual(web, running.web)) {
        logger.info('network/auth config change detected, restarting web service');
        const previous = running;
        running = undefined;
        await close(previous);
        running = await open(host, logger, config);
      }
      await advertise(host, logger, config, running);
    },
    async stop() {
      const target = running;
      running = undefined;
      if (target) await close(target);
    },
    address: () => running?.address,
    mdnsInstances: () => running?.mdns?.instances ?? [],
  };
}

/** `depends_on` of every configured resource, resolved to full names where the short name is unique. */
function explicitDependencies(config: MachineConfig): Map<string, string[]> {
  const resources = allResourceConfigs(config);
  const byShortName = new Map<string, string[]>();
  for (const resource of resources) {
    const full = formatResourceName(resource.resourceName);
    byShortName.set(resource.name, [...(byShortName.get(resource.name) ?? []), full]);
  }
  const edges = new Map<string, string[]>();
  for (const resource of resources) {
    const targets = resource.dependsOn.map((dependency) => {
      const matches = byShortName.get(dependency);
      return matches?.length === 1 ? (matches[0] as string) : dependency;
    });
    if (targets.length > 0) edges.set(formatResourceName(resource.resourceName), targets);
  }
  return edges;
}

/** Host names advertised over mDNS: the cloud FQDNs (or `network.fqdn`), else this computer's name. */
function mdnsHostNames(config: MachineConfig): string[] {
  const names = [config.cloud?.fqdn, config.cloud?.localFqdn, config.network.fqdn].filter(
    (name): name is string => typeof name === 'string' && name !== '',
  );
  if (names.length > 0) return names;
  return [...machineHostNames(config, 0)].filter(
    (name) => !name.includes(':') && !isLoopbackHost(name) && name !== '0.0.0.0' && name !== '',
  );
}

/** Lookup by short name; an unhealthy resource answers Unavailable with its reason instead of NotFound. */
function createResolver(host: MachineHost): ResourceResolver {
  return (api: Api, name: string) => {
    try {
      return host.resources.findByShortName(api, name);
    } catch (error) {
      if (!isMachineError(error) || error.code !== 'NotFound') throw error;
      const status = host
        .status()
        .resources.find((resource) => apiEquals(resource.name.api, api) && shortName(resource.name) === name);
      if (status && status.state !== 'ready') {
        const reason = status.error ? `: ${status.error}` : ` (state ${status.state})`;
        throw new MachineError('Unavailable', `resource ${JSON.stringify(name)} is not available${reason}`);
      }
      throw error;
    }
  };
}

function stopActuators(
  host: MachineHost,
  logger: Logger,
  resources: readonly MonitoredResource[],
  sessionId: string,
): void {
  for (const { api, name } of resources) {
    let resource: ReturnType<MachineHost['resources']['findByShortName']>;
    try {
      resource = host.resources.findByShortName(api, name);
    } catch {
      continue;
    }
    if (!isActuator(resource)) continue;
    logger.info('session expired: stopping the actuators it moved', { session: sessionId, resource: name });
    resource.stop({ signal: AbortSignal.timeout(closeDeadlineMs) }).catch((error: unknown) => {
      logger.error('stopping an actuator after session expiry failed', {
        resource: name,
        error: errorMessage(error),
      });
    });
  }
}
