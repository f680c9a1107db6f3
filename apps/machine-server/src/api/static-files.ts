import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import path from 'node:path';

type Response = ServerResponse | Http2ServerResponse;

export const staticPrefix = '/static/';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * `-shareddir DIR`: static web assets under `/static/<path>`. Paths are resolved inside `dir` only
 * (`..`, absolute and encoded escapes answer 404); directories answer their `index.html`.
 */
export async function serveStaticFile(dir: string, urlPath: string, res: Response): Promise<void> {
  const notFound = () =>
    (res as ServerResponse).writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  let relative: string;
  try {
    relative = decodeURIComponent(urlPath.slice(staticPrefix.length));
  } catch {
    notFound();
    return;
  }
  const root = path.resolve(dir);
  let file = path.resolve(root, relative);
  if (relative.includes('\0') || (file !== root && !file.startsWith(`${root}${path.sep}`))) {
    notFound();
    return;
  }
  let info = await stat(file).catch(() => undefined);
  if (info?.isDirectory()) {
    file = path.join(file, 'index.html');
    info = await stat(file).catch(() => undefined);
  }
  if (!info?.isFile()) {
    notFound();
    return;
  }
  (res as ServerResponse).writeHead(200, {
    'content-type': contentTypes[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
    'content-length': String(info.size),
  });
  createReadStream(file)
    .on('error', () => res.destroy())
    .pipe(res as ServerResponse);
}
