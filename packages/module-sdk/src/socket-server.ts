/**
 * A plain-text HTTP/2 gRPC server on a unix socket (mode 0776, so another user may connect) or on
 * local TCP (machine-runtime.md appendix §2.2). Used by modules for their own address and by the
 * machine-server for the module parent server.
 */
import { chmod, rm } from 'node:fs/promises';
import { createServer, type Http2Server, type ServerHttp2Session } from 'node:http2';
import type { ConnectRouter, Interceptor } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { parseSocketAddress, type SocketAddress } from './socket-address.ts';
import { maxMessageBytes } from './socket-transport.ts';

export interface SocketServerOptions {
  /** Socket path, or `host:port` (port 0 picks a free port). */
  address: string;
  routes: (router: ConnectRouter) => void;
  /** Server interceptors (e.g. mapping domain errors to gRPC status). */
  interceptors?: Interceptor[];
}

export interface SocketServer {
  /** Where the server listens (the chosen port for TCP port 0). */
  readonly address: string;
  /** Stops accepting, ends open sessions after `graceMs`, removes the socket file. */
  close(graceMs?: number): Promise<void>;
}

export async function startSocketServer(options: SocketServerOptions): Promise<SocketServer> {
  const address = parseSocketAddress(options.address);
  const handler = connectNodeAdapter({
    routes: options.routes,
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    readMaxBytes: maxMessageBytes,
    writeMaxBytes: maxMessageBytes,
  });
  const server = createServer(handler);
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  if (address.kind === 'unix') await rm(address.path, { force: true });
  await listen(server, address);
  let bound = options.address;
  if (address.kind === 'unix') {
    await chmod(address.path, 0o776);
  } else {
    const info = server.address();
    if (info && typeof info === 'object') bound = `${address.host}:${info.port}`;
  }
  return {
    address: bound,
    async close(graceMs = 1000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      const timer = setTimeout(() => {
        for (const session of sessions) session.destroy();
      }, graceMs);
      await closed;
      clearTimeout(timer);
      if (address.kind === 'unix') await rm(address.path, { force: true });
    },
  };
}

function listen(server: Http2Server, address: SocketAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if (address.kind === 'unix') server.listen(address.path, done);
    else server.listen(address.port, address.host, done);
  });
}
