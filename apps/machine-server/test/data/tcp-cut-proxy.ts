/**
 * A TCP proxy in front of the test cloud that can (a) go down — refuse connections and drop open ones —
 * and come back on the same port, and (b) cut a connection right after forwarding the server's response
 * HEADERS frame of an HTTP/2 stream, so the client never sees the rest of the response although the
 * server already finished the call (a lost acknowledgement).
 */
import net from 'node:net';

export interface CutProxy {
  readonly url: string;
  /** Cut the connection after the next `count` response HEADERS frames (one cut per response). */
  armCuts(count: number): void;
  /** Connections cut so far. */
  cuts(): number;
  /** Refuse connections and drop the open ones. */
  down(): Promise<void>;
  /** Accept connections again (same port). */
  up(): Promise<void>;
  close(): Promise<void>;
}

const frameHeaderBytes = 9;
const headersFrameType = 0x1;

export async function startCutProxy(targetUrl: string): Promise<CutProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  let armed = 0;
  let cutCount = 0;

  const handle = (client: net.Socket) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', closeBoth);
    upstream.on('error', closeBoth);
    client.on('close', closeBoth);
    upstream.on('close', closeBoth);
    client.on('data', (chunk) => upstream.write(chunk));

    // Server → client: forwarded frame by frame so a cut can happen exactly after a HEADERS frame.
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      let forwardUpTo = 0;
      while (pending.length - forwardUpTo >= frameHeaderBytes) {
        const length = pending.readUIntBE(forwardUpTo, 3);
        const type = pending[forwardUpTo + 3];
        const streamId = pending.readUInt32BE(forwardUpTo + 5) & 0x7fffffff;
        const end = forwardUpTo + frameHeaderBytes + length;
        if (end > pending.length) break;
        forwardUpTo = end;
        if (type === headersFrameType && streamId !== 0 && armed > 0) {
          armed--;
          cutCount++;
          client.write(pending.subarray(0, forwardUpTo), () => closeBoth());
          pending = Buffer.alloc(0);
          return;
        }
      }
      if (forwardUpTo > 0) {
        client.write(pending.subarray(0, forwardUpTo));
        pending = pending.subarray(forwardUpTo);
      }
    });
  };

  let server = net.createServer(handle);
  await listen(server, 0);
  const port = (server.address() as net.AddressInfo).port;

  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };

  return {
    url: `http://127.0.0.1:${port}`,
    armCuts(count) {
      armed = count;
    },
    cuts: () => cutCount,
    async down() {
      const closing = new Promise<void>((resolve) => server.close(() => resolve()));
      dropAll();
      await closing;
    },
    async up() {
      server = net.createServer(handle);
      await listen(server, port);
    },
    async close() {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function listen(server: net.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
