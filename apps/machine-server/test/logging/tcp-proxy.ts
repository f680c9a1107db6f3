import net, { type AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a server, to simulate a network outage: `cut()` closes the port and drops
 * every connection, `restore()` listens again on the same port.
 */
export interface TcpProxy {
  readonly url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const createServer = () =>
    net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      track(client);
      track(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  let server: net.Server | undefined = createServer();
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const cut = async () => {
    const current = server;
    if (!current) return;
    server = undefined;
    const closed = new Promise<void>((resolve) => current.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    cut,
    async restore() {
      if (server) return;
      const next = createServer();
      await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', resolve));
      server = next;
    },
    close: cut,
  };
}
