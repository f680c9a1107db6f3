import { STATUS_CODES } from 'node:http';
import { type AttemptOutcome, isRetryableStatus, parseRetryAfter } from './retry-policy.ts';
import type { WebhookRequest } from './webhook-request.ts';

export interface WebhookSendOptions {
  /** The whole exchange: connect, request, response head and the (limited) body. */
  timeoutMs: number;
  /** Response bytes read at most; the rest is cut off. */
  maxResponseBytes: number;
  /** Time of the attempt (for a `Retry-After` HTTP date). */
  nowMs: number;
  signal: AbortSignal;
}

/**
 * Sends one webhook request. Any 2xx is delivered; redirects are not followed (a 3xx is a final failure,
 * like 4xx other than 408/429); network errors, timeouts, 408, 429 and 5xx are retryable, with the
 * receiver's `Retry-After`. The response body is read up to a limit and discarded.
 */
export async function sendWebhook(
  request: WebhookRequest,
  options: WebhookSendOptions,
): Promise<AttemptOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      ...(request.method === 'POST' ? { body: request.body } : {}),
      redirect: 'manual',
      signal,
    });
    await drain(response, options.maxResponseBytes);
    const status = response.status;
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
    const reason = STATUS_CODES[status] ?? response.statusText ?? 'unknown';
    return {
      delivered: false,
      statusCode: status,
      error: `${retryable ? '' : 'unretryable '}status code ${status} (${reason})`,
      retryable,
      retryAfterMs: retryable
        ? parseRetryAfter(response.headers.get('retry-after'), options.nowMs)
        : undefined,
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

async function drain(response: Response, maxBytes: number): Promise<void> {
  const reader = response.body?.getReader();
  if (!reader) return;
  let read = 0;
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) return;
    read += chunk.value.byteLength;
    if (read > maxBytes) {
      await reader.cancel().catch(() => {});
      return;
    }
  }
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? (error as Error).message ?? String(error);
}
