/**
 * An authenticated Connect transport to the cloud (gRPC over HTTP/2; `http://` = h2c prior knowledge,
 * `https://` = TLS). The access token comes from `proto.rpc.v1.AuthService/Authenticate` with the
 * machine's credentials, is fetched lazily (concurrent callers share one request), attached as
 * `authorization: Bearer <token>`, and dropped when a call answers Unauthenticated (unary calls are
 * then retried once with a fresh token). Used by config fetch/poll, log upload (ms-logging) and data
 * sync (ms-data): `createClient(SomeService, connection.transport)`.
 */
import { Code, ConnectError, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { authPb } from '@mcloud/protocol/machine';
import { invalidConfig } from '../errors.ts';
import { authenticateFields, type CloudCredentials } from './cloud-credentials.ts';

export interface CloudConnectionOptions {
  /** `cloud.app_address`, e.g. `https://app.example.com:443` or `http://127.0.0.1:8080`. */
  readonly appAddress: string;
  readonly credentials: CloudCredentials;
  /** Default bound of the Authenticate call (ms); callers' signals still apply. */
  readonly authTimeoutMs?: number;
}

export interface CloudConnection {
  readonly appAddress: string;
  readonly partId: string;
  /** Authenticated transport for every cloud service. */
  readonly transport: Transport;
  /** The current access token (authenticating if none is held). */
  accessToken(signal?: AbortSignal): Promise<string>;
  /** Forget the token (next call authenticates again). */
  invalidateToken(): void;
  /** Closes the HTTP/2 session; in-flight calls fail. */
  close(): void;
}

const authServiceName = 'proto.rpc.v1.AuthService';

export function createCloudConnection(options: CloudConnectionOptions): CloudConnection {
  const baseUrl = normalizeAppAddress(options.appAddress);
  const fields = authenticateFields(options.credentials);
  const sessionManager = new Http2SessionManager(baseUrl, {
    pingIntervalMs: 30_000,
    idleConnectionTimeoutMs: 60_000,
  });
  const plain = createGrpcTransport({ baseUrl, sessionManager });
  const auth = createClient(authPb.AuthService, plain);
  const authTimeoutMs = options.authTimeoutMs ?? 15_000;

  let token: string | undefined;
  let pending: Promise<string> | undefined;
  const accessToken = (signal?: AbortSignal): Promise<string> => {
    if (token) return Promise.resolve(token);
    if (!pending) {
      const timeout = AbortSignal.timeout(authTimeoutMs);
      pending = auth
        .authenticate(
          { entity: fields.entity, credentials: { type: fields.type, payload: fields.payload } },
          { signal: signal ? AbortSignal.any([signal, timeout]) : timeout },
        )
        .then((response) => {
          token = response.accessToken;
          return response.accessToken;
        })
        .finally(() => {
          pending = undefined;
        });
    }
    return pending;
  };

  const bearer: Interceptor = (next) => async (request) => {
    if (request.service.typeName === authServiceName) return next(request);
    const used = await accessToken(request.signal);
    request.header.set('authorization', `Bearer ${used}`);
    try {
      return await next(request);
    } catch (error) {
      if (!(error instanceof ConnectError) || error.code !== Code.Unauthenticated) throw error;
      if (token === used) token = undefined;
      if (request.stream) throw error;
      request.header.set('authorization', `Bearer ${await accessToken(request.signal)}`);
      return next(request);
    }
  };

  return {
    appAddress: baseUrl,
    partId: options.credentials.partId,
    transport: createGrpcTransport({ baseUrl, sessionManager, interceptors: [bearer] }),
    accessToken,
    invalidateToken() {
      token = undefined;
    },
    close() {
      sessionManager.abort();
    },
  };
}

/** `cloud.app_address` as a base URL: `http(s)://host[:port]` (no trailing slash). */
export function normalizeAppAddress(address: string): string {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw invalidConfig('cloud.app_address', 'must be a URL like https://app.example.com:443', address);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidConfig('cloud.app_address', 'must use http or https', address);
  }
  return `${url.protocol}//${url.host}`;
}
