import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage, type RequestOptions, STATUS_CODES } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { type AttemptOutcome, isRetryableStatus, parseRetryAfter } from './retry-policy.ts';
import { parseIpAddress, refusedAddressReason, type WebhookAddressPolicy } from './webhook-address-policy.ts';
import type { WebhookRequest } from './webhook-request.ts';

export interface WebhookSendOptions {
  /** The whole exchange: name resolution, connect, request, response head and the (limited) body. */
  timeoutMs: number;
  /** Response bytes read at most; the rest is cut off. */
  maxResponseBytes: number;
  /** Time of the attempt (for a `Retry-After` HTTP date). */
  nowMs: number;
  /** Which resolved addresses may be connected to. */
  addressPolicy: WebhookAddressPolicy;
  signal: AbortSignal;
  /** Name resolution (tests inject one); default: the system resolver, every address. */
  resolve?: (hostname: string) => Promise<{ address: string; family: number }[]>;
}

const systemResolve = (hostname: string) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Sends one webhook request. The host is resolved once; if any of its addresses is refused by the
 * address policy, nothing is sent and the failure is final. Otherwise the connection goes to the first
 * checked address (pinned: no second resolution, so no DNS-rebinding window), on a fresh connection.
 * Any 2xx is delivered; redirects are not followed (a 3xx is a final failure, like 4xx other than
 * 408/429); network errors, timeouts, 408, 429 and 5xx are retryable, with the receiver's `Retry-After`.
 * The response body is read up to a limit and discarded.
 */
export async function sendWebhook(
  request: WebhookRequest,
  options: WebhookSendOptions,
): Promise<AttemptOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  try {
    const url = new URL(request.url);
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const literal = parseIpAddress(hostname) !== undefined;
    const addresses = literal
      ? [{ address: hostname, family: hostname.includes(':') ? 6 : 4 }]
      : await abortable((options.resolve ?? systemResolve)(hostname), signal);
    const pinned = addresses[0];
    if (!pinned) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
    for (const { address } of addresses) {
      const refused = refusedAddressReason(address, options.addressPolicy);
      if (refused) {
        return {
          delivered: false,
          statusCode: undefined,
          error: `refused by the webhook address policy: ${literal ? `${address} is` : `${hostname} has address ${address}, which is`} ${refused}`,
          retryable: false,
          retryAfterMs: undefined,
        };
      }
    }
    const response = await exchange(url, request, pinnedLookup(pinned), signal);
    await drain(response, options.maxResponseBytes, signal);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      return {
        delivered: true,
        statusCode: status,
        error: undefined,
        retryable: false,
        retryAfterMs: undefined,
      };
    }
    const retryable = isRetryableStatus(status);
    const reason = STATUS_CODES[status] ?? response.statusMessage ?? 'unknown';
    const retryAfter = response.headers['retry-after'];
    return {
      delivered: false,
      statusCode: status,
      error: `${retryable ? '' : 'unretryable '}status code ${status} (${reason})`,
      retryable,
      retryAfterMs: retryable ? parseRetryAfter(retryAfter ?? null, options.nowMs) : undefined,
    };
  } catch (error) {
    const text = timeout.aborted
      ? `no complete response within ${options.timeoutMs} ms`
      : options.signal.aborted
        ? 'cancelled: the cloud is stopping'
        : `request failed: ${describeNetworkError(error)}`;
    return { delivered: false, statusCode: undefined, error: text, retryable: true, retryAfterMs: undefined };
  }
}

/** A `lookup` that answers every query with the one checked address. */
function pinnedLookup(pinned: { address: string; family: number }): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
}

function exchange(
  url: URL,
  request: WebhookRequest,
  lookup: LookupFunction,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { ...request.headers };
  if (request.method === 'POST') headers['Content-Length'] = String(Buffer.byteLength(request.body));
  const options: RequestOptions = { method: request.method, headers, lookup, signal, agent: false };
  return new Promise((resolve, reject) => {
    const req = send(url, options, resolve);
    req.on('error', reject);
    req.end(request.method === 'POST' ? request.body : undefined);
  });
}

async function drain(response: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<void> {
  let read = 0;
  signal.throwIfAborted();
  for await (const chunk of response) {
    read += (chunk as Buffer).byteLength;
    if (read > maxBytes) break;
  }
  response.destroy();
  signal.throwIfAborted();
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function describeNetworkError(error: unknown): string {
  const direct = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const cause = direct.code ? direct : direct.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? direct.message ?? String(error);
}
