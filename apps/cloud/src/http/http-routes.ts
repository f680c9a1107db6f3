import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CloudDeps } from '../cloud-deps.ts';

/** Plain HTTP routes next to the RPC API (health; signed blob downloads are added by the data plane). */
export function handleHttpRoutes(deps: CloudDeps, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method === 'GET' && url.pathname === '/healthz') {
    deps.db
      .query('SELECT 1')
      .then(() => sendText(res, 200, 'ok\n'))
      .catch(() => sendText(res, 503, 'database unavailable\n'));
    return;
  }
  sendText(res, 404, 'not found\n');
}

export function sendText(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
