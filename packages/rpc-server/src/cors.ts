import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

// The TS SDK sends `authorization` and `viam_client`; gRPC-web adds its own headers.
const allowedHeaders = [
  'authorization',
  'content-type',
  'x-grpc-web',
  'x-user-agent',
  'grpc-timeout',
  'viam_client',
  'connect-protocol-version',
  'connect-timeout-ms',
  'dtname',
];
const exposedHeaders = ['grpc-status', 'grpc-message', 'grpc-status-details-bin'];

/** Adds CORS headers; answers a preflight and returns true when the request is one. */
export function applyCors(req: Request, res: Response): boolean {
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return false;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('vary', 'origin');
  res.setHeader('access-control-expose-headers', exposedHeaders.join(', '));
  if (req.method !== 'OPTIONS') return false;
  const requested = req.headers['access-control-request-headers'];
  res.setHeader('access-control-allow-methods', 'POST, GET, OPTIONS');
  res.setHeader(
    'access-control-allow-headers',
    typeof requested === 'string' ? requested : allowedHeaders.join(', '),
  );
  res.setHeader('access-control-max-age', '7200');
  (res as ServerResponse).writeHead(204).end();
  return true;
}
