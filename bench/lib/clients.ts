import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import net from 'node:net';
import { type Client, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { authPb, dataPb, dataSyncPb } from '@mcloud/protocol';
import pg from 'pg';
import type { BootstrapFile } from '../../apps/cloud/src/bootstrap.ts';

/**
 * Client connections disable Nagle's algorithm (TCP_NODELAY), as Go's gRPC (viam-server, the Go SDK)
 * and browsers do; Node's http2 client leaves it on, which adds delayed-ACK stalls to small writes.
 */
export function noDelayConnection(url: string): http2.ClientSessionOptions {
  const { hostname, port } = new URL(url);
  return { createConnection: () => net.connect({ host: hostname, port: Number(port), noDelay: true }) };
}

/** AuthService.Authenticate with the bootstrap API key → bearer token. */
export async function authenticate(url: string, bootstrap: BootstrapFile): Promise<string> {
  const auth = createClient(
    authPb.AuthService,
    createGrpcTransport({ baseUrl: url, nodeOptions: noDelayConnection(url) }),
  );
  const response = await auth.authenticate({
    entity: bootstrap.api_key_id,
    credentials: { type: 'api-key', payload: bootstrap.api_key },
  });
  return response.accessToken;
}

export interface BenchClients {
  data: Client<typeof dataPb.DataService>;
  dataSync: Client<typeof dataSyncPb.DataSyncService>;
  transport: Transport;
}

/** Connect v2 clients (gRPC over h2c) on their own HTTP/2 connection, sending the bearer token. */
export function benchClients(url: string, token: string): BenchClients {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
  const transport = createGrpcTransport({
    baseUrl: url,
    interceptors: [bearer],
    nodeOptions: noDelayConnection(url),
  });
  return {
    data: createClient(dataPb.DataService, transport),
    dataSync: createClient(dataSyncPb.DataSyncService, transport),
    transport,
  };
}

export interface BenchMachine {
  robotId: string;
  partId: string;
  robotName: string;
  partName: string;
}

/** A machine with its main part, inserted with SQL (AppService may not be served yet). */
export async function createMachine(
  db: pg.Pool | pg.Client,
  bootstrap: BootstrapFile,
  name: string,
): Promise<BenchMachine> {
  const robotId = randomUUID();
  const partId = randomUUID();
  await db.query('INSERT INTO robots (id, organization_id, location_id, name) VALUES ($1, $2, $3, $4)', [
    robotId,
    bootstrap.organization_id,
    bootstrap.location_id,
    name,
  ]);
  await db.query(
    `INSERT INTO robot_parts (id, organization_id, location_id, robot_id, name, dns_name, main_part)
     VALUES ($1, $2, $3, $4, $5, $6, true)`,
    [
      partId,
      bootstrap.organization_id,
      bootstrap.location_id,
      robotId,
      `${name}-main`,
      `${name}-main.${partId}.local`,
    ],
  );
  return { robotId, partId, robotName: name, partName: `${name}-main` };
}

export function openPool(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  return pool;
}

/** A gRPC message with its 5-byte length prefix, ready to send. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

export class GrpcStatusError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(`gRPC status ${code}: ${message}`);
    this.code = code;
  }
}

/**
 * A bare HTTP/2 gRPC client for unary and client-streaming calls with pre-encoded requests: the load generator then spends
 * (almost) no CPU on protobuf, so on a 2-core machine the server gets the cycles being measured.
 */
export class RawGrpcConnection {
  readonly session: http2.ClientHttp2Session;
  private readonly token: string;

  constructor(url: string, token: string) {
    this.session = http2.connect(url, noDelayConnection(url));
    this.session.on('error', () => {});
    this.token = token;
  }

  unary(path: string, frame: Buffer): Promise<Buffer> {
    return this.clientStream(path, [frame]);
  }

  /** Writes the frames in order, waiting for 'drain' whenever HTTP/2 flow control pushes back. */
  clientStream(path: string, frames: readonly Buffer[]): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const stream = this.session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc+proto',
        te: 'trailers',
        authorization: `Bearer ${this.token}`,
      });
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message = '';
      const take = (headers: http2.IncomingHttpHeaders) => {
        if (headers['grpc-status'] !== undefined) {
          status = String(headers['grpc-status']);
          message = decodeURIComponent(String(headers['grpc-message'] ?? ''));
        }
      };
      stream.on('response', take);
      stream.on('trailers', take);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('close', () => {
        if (status === undefined) return reject(new Error(`no grpc-status (rst code ${stream.rstCode})`));
        if (status !== '0') return reject(new GrpcStatusError(Number(status), message));
        const body = Buffer.concat(chunks);
        resolve(body.subarray(5, 5 + body.readUInt32BE(1)));
      });
      const writeAll = async () => {
        for (const frame of frames) {
          if (!stream.write(frame)) await new Promise((done) => stream.once('drain', done));
        }
        stream.end();
      };
      writeAll().catch(reject);
    });
  }

  close(): void {
    this.session.close();
  }
}
