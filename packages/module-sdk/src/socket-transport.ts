/**
 * A gRPC (h2c) client transport to a module or a parent over a unix socket or local TCP
 * (machine-runtime.md appendix §2.1: plain-text gRPC, 32 MiB messages).
 */
import { connect as netConnect } from 'node:net';
import type { Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { parseSocketAddress } from './socket-address.ts';

export const maxMessageBytes = 32 * 1024 * 1024;

export interface SocketTransport {
  readonly transport: Transport;
  /** Closes the HTTP/2 session (in-flight calls fail). */
  close(): void;
}

/** `headers` are sent with every call (e.g. `modname` from a module to its parent). */
export function createSocketTransport(
  addressText: string,
  headers: Record<string, string> = {},
): SocketTransport {
  const address = parseSocketAddress(addressText);
  const baseUrl = address.kind === 'tcp' ? `http://${address.host}:${address.port}` : 'http://localhost';
  const sessionManager = new Http2SessionManager(
    baseUrl,
    { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 },
    address.kind === 'unix' ? { createConnection: () => netConnect(address.path) } : {},
  );
  const transport = createGrpcTransport({
    baseUrl,
    sessionManager,
    readMaxBytes: maxMessageBytes,
    writeMaxBytes: maxMessageBytes,
    interceptors: [
      (next) => (request) => {
        for (const [key, value] of Object.entries(headers)) request.header.set(key, value);
        return next(request);
      },
    ],
  });
  return { transport, close: () => sessionManager.abort() };
}
