/**
 * The child process behind `startS3TestServer`: s3rver (storage, S3 REST semantics) behind a front
 * door that verifies AWS SigV4 signatures, because s3rver itself checks only that the access key id
 * exists and accepts any V4 signature. Configuration arrives as JSON in argv[2]; the ready line with
 * the front door's port goes to stdout. Exits when its stdin closes (parent gone) or on SIGTERM.
 */

import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';
import { sha256Hex, verifySigV4 } from './sigv4-verifier.ts';

interface ProcessConfig {
  directory: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const MAX_SIGNED_BODY_BYTES = 256 * 1024 * 1024;

const config = JSON.parse(process.argv[2] ?? '{}') as ProcessConfig;

patchZeroRangeEnd();

const s3rver = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: config.directory,
  vhostBuckets: false,
  configureBuckets: [{ name: config.bucket }],
});
const upstream = await s3rver.run();

const frontDoor = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    if (!res.headersSent) sendError(res, 500, 'InternalError', String(error));
    else res.destroy();
  });
});
await new Promise<void>((resolve) => frontDoor.listen(0, '127.0.0.1', resolve));
const { port } = frontDoor.address() as AddressInfo;
process.stdout.write(`${JSON.stringify({ port })}\n`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  frontDoor.closeAllConnections();
  await new Promise<void>((resolve) => frontDoor.close(() => resolve()));
  await s3rver.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.on('error', () => void stop());
process.stdin.resume();

/**
 * s3rver writes objects in place, so two concurrent writes of one key can interleave into a torn object
 * where S3 would keep one whole version. Writes (PUT, POST, DELETE) of the same path take turns here.
 */
const writeQueues = new Map<string, Promise<void>>();
async function inTurnForPath(path: string, work: () => Promise<void>): Promise<void> {
  const previous = writeQueues.get(path) ?? Promise.resolve();
  const current = previous.then(work, work);
  const settled = current.catch(() => {});
  writeQueues.set(path, settled);
  try {
    await current;
  } finally {
    if (writeQueues.get(path) === settled) writeQueues.delete(path);
  }
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  const verdict = verifySigV4({ method: req.method ?? 'GET', url, headers: req.headers }, config, Date.now());
  if (!verdict.ok) {
    req.resume();
    sendError(res, verdict.status, verdict.code, verdict.message);
    return;
  }
  if (verdict.payloadHash.startsWith('STREAMING-')) {
    req.resume();
    sendError(
      res,
      501,
      'NotImplemented',
      `payload signing mode ${verdict.payloadHash} is not supported here`,
    );
    return;
  }

  let body: Buffer | undefined;
  if (/^[0-9a-f]{64}$/.test(verdict.payloadHash)) {
    // A signed payload: read it whole, check it, and only then let storage see it.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_SIGNED_BODY_BYTES) {
        sendError(res, 400, 'EntityTooLarge', 'signed payload larger than this test server accepts');
        return;
      }
      chunks.push(chunk);
    }
    body = Buffer.concat(chunks);
    if (sha256Hex(body) !== verdict.payloadHash) {
      sendError(res, 400, 'XAmzContentSHA256Mismatch', 'the body does not match x-amz-content-sha256');
      return;
    }
  }

  const forward = () => forwardToS3rver(req, res, url, verdict.presigned, body);
  if (req.method === 'GET' || req.method === 'HEAD') await forward();
  else await inTurnForPath(url.split('?')[0] ?? url, forward);
}

async function forwardToS3rver(
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  presigned: boolean,
  body: Buffer | undefined,
): Promise<void> {
  // Forward without credentials: s3rver accepts anonymous requests and does not know our keys.
  const headers = { ...req.headers, host: `127.0.0.1:${upstream.port}` };
  delete headers.authorization;
  const forwardedUrl = presigned ? stripPresignParameters(url) : url;
  const upstreamRequest = httpRequest({
    host: '127.0.0.1',
    port: upstream.port,
    method: req.method,
    path: forwardedUrl,
    headers,
  });
  const responded = new Promise<void>((resolve, reject) => {
    upstreamRequest.on('response', (upstreamResponse) => {
      res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
      pipeline(upstreamResponse, res).then(resolve, reject);
    });
    upstreamRequest.on('error', reject);
  });
  if (body !== undefined) upstreamRequest.end(body);
  else await pipeline(req, upstreamRequest);
  res.on('close', () => upstreamRequest.destroy());
  await responded;
}

/**
 * s3rver 3.7.1 reads a range end with `end || Infinity`, so `Range: bytes=0-0` returns the whole
 * object. Hand it the end 0 as a truthy Number object, which `Math.min` still reads as 0.
 */
function patchZeroRangeEnd(): void {
  type GetObject = (
    bucket: string,
    key: string,
    options?: { start?: number; end?: number | object },
  ) => unknown;
  const FilesystemStore = createRequire(import.meta.url)('s3rver/lib/stores/filesystem.js') as {
    prototype: { getObject: GetObject };
  };
  const original = FilesystemStore.prototype.getObject;
  FilesystemStore.prototype.getObject = function getObject(this: unknown, bucket, key, options) {
    const fixed = options?.end === 0 ? { ...options, end: Object(0) as object } : options;
    return original.call(this, bucket, key, fixed);
  };
}

function stripPresignParameters(url: string): string {
  const queryIndex = url.indexOf('?');
  const kept = url
    .slice(queryIndex + 1)
    .split('&')
    .filter(
      (pair) =>
        !/^X-Amz-(Algorithm|Credential|Date|Expires|SignedHeaders|Signature|Security-Token)=/i.test(pair),
    );
  return kept.length === 0 ? url.slice(0, queryIndex) : `${url.slice(0, queryIndex)}?${kept.join('&')}`;
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`;
  res.writeHead(status, { 'content-type': 'application/xml', connection: 'close' });
  res.end(xml);
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
