import { type Client, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { appPb, authPb, dataPb, dataSyncPb, datasetPb, robotPb } from '@mcloud/protocol';

/** Credentials of an API key (`api-key`) or of a machine part (`robot-secret`). */
export type TestCredentials = { keyId: string; key: string } | { partId: string; secret: string };

export type TestTransportKind = 'grpc' | 'grpc-web';

export interface AuthedClients {
  app: Client<typeof appPb.AppService>;
  robot: Client<typeof robotPb.RobotService>;
  data: Client<typeof dataPb.DataService>;
  dataSync: Client<typeof dataSyncPb.DataSyncService>;
  dataset: Client<typeof datasetPb.DatasetService>;
  /** The bearer token every client sends. */
  accessToken: string;
  /** The authenticated transport, for services not listed here (`createClient(Service, transport)`). */
  transport: Transport;
}

/** A Connect v2 transport to the test cloud: gRPC over HTTP/2 (h2c) or gRPC-web over HTTP/1.1. */
export function createTestTransport(
  url: string,
  kind: TestTransportKind = 'grpc',
  interceptors: Interceptor[] = [],
): Transport {
  return kind === 'grpc'
    ? createGrpcTransport({ baseUrl: url, interceptors })
    : createGrpcWebTransport({ baseUrl: url, httpVersion: '1.1', interceptors });
}

/** Exchanges credentials for a bearer token with `proto.rpc.v1.AuthService/Authenticate`. */
export async function authenticate(
  url: string,
  credentials: TestCredentials,
  kind: TestTransportKind = 'grpc',
): Promise<string> {
  const auth = createClient(authPb.AuthService, createTestTransport(url, kind));
  const response =
    'keyId' in credentials
      ? await auth.authenticate({
          entity: credentials.keyId,
          credentials: { type: 'api-key', payload: credentials.key },
        })
      : await auth.authenticate({
          entity: credentials.partId,
          credentials: { type: 'robot-secret', payload: credentials.secret },
        });
  return response.accessToken;
}

/** Clients that send `authorization: Bearer <token>` on every call. */
export function clientsWithToken(
  url: string,
  accessToken: string,
  kind: TestTransportKind = 'grpc',
): AuthedClients {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${accessToken}`);
    return next(req);
  };
  const transport = createTestTransport(url, kind, [bearer]);
  return {
    app: createClient(appPb.AppService, transport),
    robot: createClient(robotPb.RobotService, transport),
    data: createClient(dataPb.DataService, transport),
    dataSync: createClient(dataSyncPb.DataSyncService, transport),
    dataset: createClient(datasetPb.DatasetService, transport),
    accessToken,
    transport,
  };
}

/**
 * Authenticates once and returns typed Connect v2 clients for the cloud's main services.
 * Example: `const { app } = await createAuthedClients(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key })`.
 */
export async function createAuthedClients(
  url: string,
  credentials: TestCredentials,
  transport: TestTransportKind = 'grpc',
): Promise<AuthedClients> {
  return clientsWithToken(url, await authenticate(url, credentials, transport), transport);
}
