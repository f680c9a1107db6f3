import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * An independent AWS Signature Version 4 verifier for S3 requests (header and presigned-query
 * authentication), written from the published algorithm rather than with the SDK's signer, so a test
 * server built on it checks what the client really signs.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html
 */
export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export interface SigV4Request {
  method: string;
  /** The request target as received: raw path plus optional `?query`. */
  url: string;
  headers: IncomingHttpHeaders;
}

export type SigV4Verdict =
  | { ok: true; payloadHash: string; presigned: boolean }
  | { ok: false; status: number; code: string; message: string };

const ALGORITHM = 'AWS4-HMAC-SHA256';
const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGN_EXPIRES_SECONDS = 7 * 24 * 3600;

export function verifySigV4(
  request: SigV4Request,
  credentials: SigV4Credentials,
  nowMs: number,
): SigV4Verdict {
  const queryIndex = request.url.indexOf('?');
  const rawPath = queryIndex === -1 ? request.url : request.url.slice(0, queryIndex);
  const rawQuery = queryIndex === -1 ? '' : request.url.slice(queryIndex + 1);
  const query = parseQuery(rawQuery);
  const authorization = headerValue(request.headers, 'authorization');
  const presigned = query.some(([name]) => name === 'X-Amz-Algorithm');

  let accessKeyId: string;
  let scope: string[];
  let signedHeaders: string[];
  let signature: string;
  let amzDate: string;
  let payloadHash: string;

  if (authorization !== undefined && presigned) {
    return fail(400, 'InvalidArgument', 'only one authentication mechanism may be used');
  }
  if (authorization !== undefined) {
    if (!authorization.startsWith(`${ALGORITHM} `)) {
      return fail(400, 'InvalidArgument', `unsupported Authorization type (only ${ALGORITHM})`);
    }
    const parts = new Map<string, string>();
    for (const component of authorization.slice(ALGORITHM.length + 1).split(',')) {
      const eq = component.indexOf('=');
      if (eq > 0) parts.set(component.slice(0, eq).trim(), component.slice(eq + 1).trim());
    }
    const credential = parts.get('Credential');
    const headersList = parts.get('SignedHeaders');
    const providedSignature = parts.get('Signature');
    if (credential === undefined || headersList === undefined || providedSignature === undefined) {
      return fail(400, 'AuthorizationHeaderMalformed', 'needs Credential, SignedHeaders and Signature');
    }
    [accessKeyId = '', ...scope] = credential.split('/');
    signedHeaders = headersList.split(';');
    signature = providedSignature;
    amzDate = headerValue(request.headers, 'x-amz-date') ?? '';
    const contentHash = headerValue(request.headers, 'x-amz-content-sha256');
    if (contentHash === undefined) {
      return fail(400, 'InvalidRequest', 'missing required header x-amz-content-sha256');
    }
    payloadHash = contentHash;
    const requestTimeMs = parseAmzDate(amzDate);
    if (requestTimeMs === undefined) return fail(403, 'AccessDenied', 'x-amz-date missing or malformed');
    if (Math.abs(nowMs - requestTimeMs) > MAX_CLOCK_SKEW_MS) {
      return fail(
        403,
        'RequestTimeTooSkewed',
        'request time differs from server time by more than 15 minutes',
      );
    }
  } else if (presigned) {
    const get = (name: string) => query.find(([key]) => key === name)?.[1];
    if (get('X-Amz-Algorithm') !== ALGORITHM) {
      return fail(400, 'AuthorizationQueryParametersError', `X-Amz-Algorithm must be ${ALGORITHM}`);
    }
    const credential = get('X-Amz-Credential');
    const headersList = get('X-Amz-SignedHeaders');
    const providedSignature = get('X-Amz-Signature');
    const date = get('X-Amz-Date');
    const expires = Number(get('X-Amz-Expires'));
    if (!credential || !headersList || !providedSignature || !date || !Number.isInteger(expires)) {
      return fail(400, 'AuthorizationQueryParametersError', 'incomplete presigned query parameters');
    }
    [accessKeyId = '', ...scope] = credential.split('/');
    signedHeaders = headersList.split(';');
    signature = providedSignature;
    amzDate = date;
    payloadHash = get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
    const requestTimeMs = parseAmzDate(amzDate);
    if (requestTimeMs === undefined) return fail(403, 'AccessDenied', 'X-Amz-Date malformed');
    if (expires < 0 || expires > MAX_PRESIGN_EXPIRES_SECONDS) {
      return fail(400, 'AuthorizationQueryParametersError', 'X-Amz-Expires must be within 0..604800');
    }
    if (nowMs > requestTimeMs + expires * 1000) return fail(403, 'AccessDenied', 'request has expired');
  } else {
    return fail(403, 'AccessDenied', 'anonymous requests are not allowed');
  }

  if (accessKeyId !== credentials.accessKeyId) {
    return fail(403, 'InvalidAccessKeyId', 'the access key id does not exist');
  }
  const [scopeDate, scopeRegion, scopeService, scopeTerminator] = scope;
  if (
    scope.length !== 4 ||
    scopeDate !== amzDate.slice(0, 8) ||
    scopeRegion !== credentials.region ||
    scopeService !== 's3' ||
    scopeTerminator !== 'aws4_request'
  ) {
    return fail(400, 'AuthorizationHeaderMalformed', `bad credential scope ${scope.join('/')}`);
  }
  if (!signedHeaders.includes('host'))
    return fail(400, 'AuthorizationHeaderMalformed', 'host must be signed');

  const canonicalRequest = [
    request.method,
    canonicalUri(rawPath),
    canonicalQuery(query.filter(([name]) => name !== 'X-Amz-Signature')),
    ...signedHeaders.map((name) => `${name}:${canonicalHeaderValue(request.headers, name)}`),
    '',
    signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
  const stringToSign = [ALGORITHM, amzDate, scope.join('/'), sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer = hmac(`AWS4${credentials.secretAccessKey}`, scopeDate);
  for (const part of [scopeRegion, scopeService, scopeTerminator]) key = hmac(key, part);
  const expected = Buffer.from(hmac(key, stringToSign).toString('hex'));
  const provided = Buffer.from(signature);
  if (expected.length !== provided.length || !timingSafeEqual(expected, provided)) {
    return fail(403, 'SignatureDoesNotMatch', 'the request signature does not match');
  }
  return { ok: true, payloadHash, presigned };
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function fail(status: number, code: string, message: string): SigV4Verdict {
  return { ok: false, status, code, message };
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function canonicalHeaderValue(headers: IncomingHttpHeaders, name: string): string {
  return (headerValue(headers, name) ?? '').trim().replace(/\s+/g, ' ');
}

function parseAmzDate(value: string): number | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match.map(Number);
  return Date.UTC(y ?? 0, (mo ?? 1) - 1, d, h, mi, s);
}

function parseQuery(rawQuery: string): [string, string][] {
  if (rawQuery === '') return [];
  return rawQuery.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    const value = eq === -1 ? '' : pair.slice(eq + 1);
    return [decodeQueryPart(name), decodeQueryPart(value)];
  });
}

function decodeQueryPart(text: string): string {
  return decodeURIComponent(text.replace(/\+/g, '%20'));
}

function rfc3986(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function canonicalUri(rawPath: string): string {
  // S3 signs the path encoded once: decode what arrived, then encode each segment per RFC 3986.
  return rawPath
    .split('/')
    .map((segment) => rfc3986(decodeURIComponent(segment)))
    .join('/');
}

function canonicalQuery(pairs: [string, string][]): string {
  return pairs
    .map(([name, value]) => [rfc3986(name), rfc3986(value)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}
