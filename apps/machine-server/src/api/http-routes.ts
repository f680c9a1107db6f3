import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { networkInterfaces } from 'node:os';
import type { MachineStatus, RestartStatus } from '../machine-host.ts';
import { handleDebugRoutes } from './debug-routes.ts';
import { serveStaticFile, staticPrefix } from './static-files.ts';

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

export interface HttpRoutesDeps {
  restartStatus(signal: AbortSignal): Promise<RestartStatus>;
  /** The module server's TCP address when modules use TCP, else empty. */
  moduleServerTcpAddress(): string;
  /** `-webprofile` or `enable_web_profile`: the profiler routes are on. */
  webProfile(): boolean;
  /** For `/debug/graph`: statuses and explicit `depends_on` edges (full names). */
  graph(): { status: MachineStatus; dependsOn: ReadonlyMap<string, readonly string[]> };
  /** `-shareddir`: static assets under `/static/`. */
  readonly sharedDir: string | undefined;
}

export const rootText = 'I am a machine-server, navigate to the Machine Cloud console to manage me.';

/**
 * Plain HTTP routes next to the RPCs (machine-runtime.md A7.1): `/` for the agent's health check,
 * `/restart_status` (A8, A9) and, with the web profile, `/debug/*` — both only for callers on this
 * machine (loopback or one of the host's own addresses); `/static/*` with `-shareddir`; else 404.
 */
export function handleHttpRoutes(deps: HttpRoutesDeps, req: Request, res: Response): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const local = isLocalCaller(req.socket.remoteAddress);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    answer(res, 404, 'text/plain', 'not found\n');
  } else if (path === '/') {
    answer(res, 200, 'text/plain; charset=utf-8', rootText);
  } else if (path === '/restart_status') {
    if (local) void answerRestartStatus(deps, res);
    else answer(res, 403, 'text/plain', 'restart status is only answered to callers on this machine\n');
  } else if (path.startsWith('/debug/') && deps.webProfile()) {
    if (!local) answer(res, 403, 'text/plain', 'the profiler is only answered to callers on this machine\n');
    else if (!handleDebugRoutes(path, req, res, deps.graph)) answer(res, 404, 'text/plain', 'not found\n');
  } else if (path.startsWith(staticPrefix) && deps.sharedDir) {
    void serveStaticFile(deps.sharedDir, path, res);
  } else {
    answer(res, 404, 'text/plain', 'not found\n');
  }
}

const restartStatusTimeoutMs = 10_000;

async function answerRestartStatus(deps: HttpRoutesDeps, res: Response): Promise<void> {
  // The maintenance sensor is read with its own 5 s bound; a failure means "not allowed" (A8, B2.4).
  const restartAllowed = await deps
    .restartStatus(AbortSignal.timeout(restartStatusTimeoutMs))
    .then((status) => status.restartAllowed)
    .catch(() => false);
  answer(
    res,
    200,
    'application/json',
    JSON.stringify({
      restart_allowed: restartAllowed,
      does_not_handle_needs_restart: true,
      module_server_tcp_addr: deps.moduleServerTcpAddress(),
    }),
  );
}

function answer(res: Response, status: number, contentType: string, body: string): void {
  (res as ServerResponse).writeHead(status, { 'content-type': contentType }).end(body);
}

/** Loopback, or an address of one of this host's interfaces (IPv4-mapped IPv6 included). */
export function isLocalCaller(remoteAddress: string | undefined): boolean {
  if (!remoteAddress) return false;
  const address = remoteAddress.replace(/^::ffff:/i, '');
  if (address === '::1' || address.startsWith('127.')) return true;
  return Object.values(networkInterfaces()).some((entries) =>
    (entries ?? []).some((entry) => entry.address.replace(/%.*$/, '') === address),
  );
}
