import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { ConnectRouter } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { type commonPb, robotPb } from '@mcloud/protocol';

/**
 * A local gRPC (h2c) server implementing only `viam.app.v1.RobotService/Log`, for upload tests that
 * need to stop and restart "the cloud" on the same port. Every other RPC answers Unimplemented.
 */
export interface FakeLogCloud {
  readonly url: string;
  readonly received: { partId: string; logs: commonPb.LogEntry[] }[];
  /** Every received entry, in arrival order. */
  entries(): commonPb.LogEntry[];
  stop(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
}

export async function startFakeLogCloud(): Promise<FakeLogCloud> {
  const received: { partId: string; logs: commonPb.LogEntry[] }[] = [];
  const handler = connectNodeAdapter({
    routes: (router: ConnectRouter) =>
      router.service(robotPb.RobotService, {
        log(request) {
          received.push({ partId: request.id, logs: request.logs });
          return {};
        },
      }),
  });
  let server = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  const track = (target: http2.Http2Server) =>
    target.on('session', (session) => {
      sessions.add(session);
      session.on('close', () => sessions.delete(session));
    });
  track(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let running = true;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    entries: () => received.flatMap((request) => request.logs),
    async stop() {
      if (!running) return;
      running = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.destroy();
      await closed;
    },
    async restart() {
      if (running) return;
      server = http2.createServer(handler);
      track(server);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      running = true;
    },
  };
}
