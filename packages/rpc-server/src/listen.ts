import { readFile } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import net from 'node:net';

export type RequestHandler = (
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
) => void;

export interface ListenOptions {
  host: string;
  port: number;
  tls: { certFile: string; keyFile: string } | undefined;
  handler: RequestHandler;
}

export interface Listener {
  port: number;
  /** Stops accepting, lets in-flight calls finish until the deadline, then destroys what is left. */
  close(deadlineMs: number): Promise<void>;
}

const http2Preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const http2Settings = { maxConcurrentStreams: 1000, initialWindowSize: 4 * 1024 * 1024 };
// Room for several 32 MiB messages in flight per connection (the default 10 MB resets big streams).
const http2MaxSessionMemoryMb = 256;
const connectionWindowBytes = 8 * 1024 * 1024;

/**
 * One port for every client. Cleartext: a sniffer reads the first bytes and hands the socket to the
 * HTTP/2 server (gRPC with prior knowledge, as Go clients and machines dial `http://`) or the HTTP/1.1
 * server (gRPC-web, Connect, signed URLs). TLS: ALPN picks h2 or http/1.1.
 */
export async function listen(options: ListenOptions): Promise<Listener> {
  const sockets = new Set<net.Socket>();
  let closing = false;
  const h1Requests = new Map<net.Socket, number>();
  let front: net.Server;
  let sessions: http2.Http2Server | http2.Http2SecureServer;
  let http1: http.Server | undefined;
  if (options.tls) {
    const [cert, key] = await Promise.all([readFile(options.tls.certFile), readFile(options.tls.keyFile)]);
    const secure = http2.createSecureServer(
      { cert, key, allowHTTP1: true, settings: http2Settings, maxSessionMemory: http2MaxSessionMemoryMb },
      options.handler,
    );
    sessions = secure;
    front = secure;
  } else {
    const h2c = http2.createServer(
      { settings: http2Settings, maxSessionMemory: http2MaxSessionMemoryMb },
      options.handler,
    );
    const h1 = http.createServer(options.handler);
    h1.keepAliveTimeout = 65_000;
    // The sniffed HTTP/1.1 server never listens itself, so Node does not track its connections and
    // `closeIdleConnections` does nothing: keep-alive sockets are tracked here and ended once idle
    // after `close` started, instead of holding the graceful stop until its deadline.
    h1.on('connection', (socket: net.Socket) => {
      h1Requests.set(socket, 0);
      socket.once('close', () => h1Requests.delete(socket));
    });
    h1.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket;
      h1Requests.set(socket, (h1Requests.get(socket) ?? 0) + 1);
      res.once('close', () => {
        const left = (h1Requests.get(socket) ?? 1) - 1;
        h1Requests.set(socket, left);
        if (closing && left === 0) socket.end();
      });
    });
    sessions = h2c;
    http1 = h1;
    front = net.createServer((socket) => routeBySniffing(socket, h2c, h1));
  }
  const openSessions = new Set<http2.Http2Session>();
  sessions.on('session', (session: http2.Http2Session) => {
    // The connection-level window stays at 64 KiB unless raised, stalling uploads on every chunk.
    session.setLocalWindowSize(connectionWindowBytes);
    openSessions.add(session);
    session.once('close', () => openSessions.delete(session));
  });
  front.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(options.port, options.host, () => resolve());
  });
  const address = front.address();
  const port = typeof address === 'object' && address ? address.port : options.port;

  async function close(deadlineMs: number): Promise<void> {
    closing = true;
    const closed = Promise.all([
      new Promise((resolve) => front.close(resolve)),
      options.tls ? undefined : new Promise((resolve) => sessions.close(resolve)),
      http1 ? new Promise((resolve) => http1?.close(resolve)) : undefined,
    ]);
    http1?.closeIdleConnections();
    for (const [socket, requests] of h1Requests) if (requests === 0) socket.end();
    // Clients keep HTTP/2 sessions open while idle; GOAWAY lets their in-flight streams finish and
    // closes them, so a graceful stop does not wait for the deadline when nothing is running.
    for (const session of openSessions) session.close();
    const timer = setTimeout(() => {
      for (const socket of sockets) socket.destroy();
    }, deadlineMs);
    await closed;
    clearTimeout(timer);
  }
  return { port, close };
}

function routeBySniffing(socket: net.Socket, h2c: http2.Http2Server, h1: http.Server): void {
  // Nagle plus delayed ACKs would add ~40 ms to small RPCs.
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  socket.once('data', (first: Buffer) => {
    socket.pause();
    // Both servers take the socket itself with the sniffed bytes pushed back: the HTTP/2 core feeds
    // whatever is already buffered on the socket to its session before it reads the native handle
    // directly, so no JavaScript stream sits between the kernel and nghttp2.
    socket.unshift(first);
    const prefixLength = Math.min(first.length, http2Preface.length);
    if (first.subarray(0, prefixLength).equals(http2Preface.subarray(0, prefixLength))) {
      h2c.emit('connection', socket);
    } else {
      h1.emit('connection', socket);
      socket.resume();
    }
  });
}
