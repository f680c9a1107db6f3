import http2 from 'node:http2';
import net from 'node:net';

/**
 * EXPERIMENT, off by default (`--server-nodelay`): makes the cloud's listening socket accept connections
 * with TCP_NODELAY by wrapping `net.createServer` before the cloud starts. The cloud's h2c front door
 * (packages/rpc-server/src/listen.ts) creates its server without `noDelay`, so a response written as several
 * small frames waits on Nagle's algorithm + the peer's delayed ACK (~40 ms). Figures measured with this
 * flag show what the one-line fix in listen.ts would give; the headline figures are measured without it.
 */
export function enableServerNoDelayExperiment(): void {
  const create = net.createServer;
  (net as { createServer: unknown }).createServer = (
    optionsOrListener?: net.ServerOpts | ((socket: net.Socket) => void),
    listener?: (socket: net.Socket) => void,
  ) =>
    typeof optionsOrListener === 'function'
      ? create({ noDelay: true }, optionsOrListener)
      : create({ ...optionsOrListener, noDelay: true }, listener);
}

/**
 * EXPERIMENT, off by default (`--server-window`): every HTTP/2 session the cloud accepts gets an 8 MiB
 * connection-level receive window (`session.setLocalWindowSize`). listen.ts raises the per-stream window
 * (`initialWindowSize`) but the connection window stays at HTTP/2's default 65,535 bytes, smaller than
 * one 64 KiB FileUpload chunk in its gRPC frame, so a streaming client stalls on WINDOW_UPDATE round trips.
 */
export function enableServerWindowExperiment(): void {
  const create = http2.createServer;
  (http2 as { createServer: unknown }).createServer = (
    ...createArgs: Parameters<typeof http2.createServer>
  ) => {
    const server = (create as (...a: unknown[]) => http2.Http2Server)(...createArgs);
    server.on('session', (session) => session.setLocalWindowSize(8 * 1024 * 1024));
    return server;
  };
}

/** Applies the experiments named in BENCH_SERVER_EXPERIMENTS (comma-separated: nodelay, window). */
export function applyServerExperiments(names: readonly string[]): void {
  if (names.includes('nodelay')) enableServerNoDelayExperiment();
  if (names.includes('window')) enableServerWindowExperiment();
}
