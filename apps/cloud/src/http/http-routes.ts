import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { pipeline } from 'node:stream/promises';
import type { CloudDeps } from '../cloud-deps.ts';
import { findDownloadableBinary } from '../domain/data/binary-downloads.ts';
import { DOWNLOAD_PATH_PREFIX, verifySignedDownload } from '../domain/data/signed-urls.ts';
import { isBlobNotFoundError } from '../infra/blobs/blob-store.ts';

type HttpRequest = IncomingMessage | Http2ServerRequest;
type HttpResponse = ServerResponse | Http2ServerResponse;

/** Plain HTTP routes next to the RPC API: health and signed binary downloads (no bearer token needed). */
export function handleHttpRoutes(deps: CloudDeps, req: HttpRequest, res: HttpResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method === 'GET' && url.pathname === '/healthz') {
    deps.db
      .query('SELECT 1')
      .then(() => sendText(res, 200, 'ok\n'))
      .catch(() => sendText(res, 503, 'database unavailable\n'));
    return;
  }
  if ((req.method === 'GET' || req.method === 'HEAD') && url.pathname.startsWith(DOWNLOAD_PATH_PREFIX)) {
    serveSignedDownload(deps, req, res, url).catch(() => {
      if (!res.headersSent) sendText(res, 500, 'internal error\n');
      else res.destroy();
    });
    return;
  }
  sendText(res, 404, 'not found\n');
}

export function sendText(
  res: HttpResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  (res as ServerResponse)
    .writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers })
    .end(body);
}

/**
 * `GET|HEAD /download/<org>/<location>/<file>?expires=<epoch ms>&sig=<mac>`: streams the item with its
 * content type and length; honours a single `Range: bytes=…` (206 / 416).
 */
async function serveSignedDownload(
  deps: CloudDeps,
  req: HttpRequest,
  res: HttpResponse,
  url: URL,
): Promise<void> {
  let binaryDataId: string;
  try {
    binaryDataId = url.pathname
      .slice(DOWNLOAD_PATH_PREFIX.length)
      .split('/')
      .map(decodeURIComponent)
      .join('/');
  } catch {
    sendText(res, 400, 'malformed download path\n');
    return;
  }
  const check = await verifySignedDownload(
    deps,
    binaryDataId,
    url.searchParams.get('expires'),
    url.searchParams.get('sig'),
    deps.clock.nowMs(),
  );
  if (!check.ok) {
    sendText(
      res,
      403,
      check.reason === 'expired'
        ? 'this signed URL has expired; request a new one with CreateBinaryDataSignedURL\n'
        : 'invalid signed URL: the signature does not match this binary data ID and expiry\n',
    );
    return;
  }
  const item = await findDownloadableBinary(deps.db, binaryDataId);
  if (!item) {
    sendText(res, 404, 'binary data not found (it may have been deleted)\n');
    return;
  }
  const size = item.sizeBytes;
  const headers: Record<string, string> = {
    'content-type': item.mimeType,
    'accept-ranges': 'bytes',
    etag: `"${item.sha256Hex}"`,
    'cache-control': 'private, max-age=300',
    'content-disposition': contentDisposition(item.downloadName),
  };
  const range = parseRange(firstHeader(req.headers.range), size);
  if (range === 'unsatisfiable') {
    sendText(res, 416, `requested range not satisfiable (size ${size} bytes)\n`, {
      'content-range': `bytes */${size}`,
    });
    return;
  }
  const response = res as ServerResponse;
  if (range) {
    headers['content-range'] = `bytes ${range.start}-${range.end}/${size}`;
    headers['content-length'] = String(range.end - range.start + 1);
  } else {
    headers['content-length'] = String(size);
  }
  if (req.method === 'HEAD') {
    response.writeHead(range ? 206 : 200, headers).end();
    return;
  }
  if (size === 0) {
    response.writeHead(200, headers).end();
    return;
  }
  let body: NodeJS.ReadableStream;
  try {
    body = await deps.blobs.get(
      item.blobKey,
      range ? { range: { start: range.start, endInclusive: range.end } } : {},
    );
  } catch (error) {
    if (isBlobNotFoundError(error)) {
      sendText(res, 404, 'binary data content not found\n');
      return;
    }
    throw error;
  }
  response.writeHead(range ? 206 : 200, headers);
  try {
    await pipeline(body, response);
  } catch {
    // The client went away or the store failed mid-stream; the connection is already torn down.
    res.destroy();
  }
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * One `bytes=` range (start-end, start- or -suffix) → inclusive bounds; undefined when absent, malformed
 * or a multi-range (then the whole body is sent, as RFC 9110 allows); 'unsatisfiable' when it misses.
 */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return undefined;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
