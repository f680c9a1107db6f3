import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  type AttemptOutcome,
  backoffDelayMs,
  decideNextStep,
  isRetryableStatus,
  parseRetryAfter,
} from '../../src/domain/triggers/delivery/retry-policy.ts';
import { defaultTriggerDeliverySettings as settings } from '../../src/domain/triggers/delivery/trigger-delivery-settings.ts';
import { splitBasicCredentials } from '../../src/domain/triggers/delivery/webhook-request.ts';

const failed = (overrides: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  delivered: false,
  statusCode: 503,
  error: 'status code 503 (Service Unavailable)',
  retryable: true,
  retryAfterMs: undefined,
  ...overrides,
});

test('retryable statuses: 408, 429 and 5xx; not 404 or other 4xx', () => {
  assert.deepEqual(
    [200, 301, 400, 401, 404, 408, 418, 429, 500, 502, 503, 599].filter(isRetryableStatus),
    [408, 429, 500, 502, 503, 599],
  );
});

test('full-jitter backoff stays within [1, min(max, base × 2^(n-1))] and reaches both ends', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 60 }),
      fc.double({ min: 0, max: 0.999999, noNaN: true }),
      (n, r) => {
        const delay = backoffDelayMs(n, settings, () => r);
        const ceiling = Math.min(settings.retryMaxDelayMs, settings.retryBaseDelayMs * 2 ** (n - 1));
        return delay >= 1 && delay <= ceiling;
      },
    ),
  );
  assert.equal(
    backoffDelayMs(1, settings, () => 0),
    1,
  );
  assert.equal(
    backoffDelayMs(3, settings, () => 0.5),
    20_000,
  );
  assert.equal(
    backoffDelayMs(30, settings, () => 0.999),
    Math.floor(0.999 * 3_600_000),
  );
});

test('Retry-After: delay-seconds or an HTTP date against the injected time; junk is ignored', () => {
  const now = Date.parse('2026-11-21T03:00:00Z');
  assert.equal(parseRetryAfter('120', now), 120_000);
  assert.equal(parseRetryAfter(' 0 ', now), 0);
  assert.equal(parseRetryAfter('Sat, 21 Nov 2026 03:05:00 GMT', now), 300_000);
  assert.equal(parseRetryAfter('Sat, 21 Nov 2026 02:00:00 GMT', now), 0);
  assert.equal(parseRetryAfter('soon', now), undefined);
  assert.equal(parseRetryAfter('-5', now), undefined);
  assert.equal(parseRetryAfter(null, now), undefined);
});

test('decisions: delivered; final without retry; Retry-After capped; never past the 24 h window', () => {
  const first = Date.parse('2026-11-21T00:00:00Z');
  const at = (nowMs: number, roundAttempt = 2) => ({ roundAttempt, nowMs, firstAttemptMs: first });
  assert.deepEqual(decideNextStep({ ...failed(), delivered: true }, at(first), settings, Math.random), {
    status: 'delivered',
  });
  assert.deepEqual(
    decideNextStep(failed({ statusCode: 404, retryable: false }), at(first), settings, Math.random),
    {
      status: 'failed',
      reason: 'not retryable',
    },
  );
  assert.deepEqual(decideNextStep(failed({ retryAfterMs: 7_000 }), at(first), settings, Math.random), {
    status: 'retrying',
    delayMs: 7_000,
  });
  assert.deepEqual(
    decideNextStep(failed({ retryAfterMs: 48 * 3_600_000 }), at(first), settings, Math.random),
    {
      status: 'retrying',
      delayMs: 6 * 3_600_000,
    },
  );
  // One hour before the end, a 2 h Retry-After becomes a last attempt at the end of the window.
  const late = first + 23 * 3_600_000;
  assert.deepEqual(decideNextStep(failed({ retryAfterMs: 2 * 3_600_000 }), at(late), settings, Math.random), {
    status: 'retrying',
    delayMs: 3_600_000,
  });
  assert.deepEqual(decideNextStep(failed(), at(first + 24 * 3_600_000, 17), settings, Math.random), {
    status: 'failed',
    reason: 'gave up after 17 attempts over 24 h',
  });
});

test('Basic credentials move from the URL to an Authorization header (malformed escapes kept as written)', () => {
  assert.deepEqual(splitBasicCredentials('https://a%40b:p%3Ass@hooks.example/x?y=1'), {
    url: 'https://hooks.example/x?y=1',
    authorization: `Basic ${Buffer.from('a@b:p:ss').toString('base64')}`,
  });
  assert.deepEqual(splitBasicCredentials('https://hooks.example/x'), {
    url: 'https://hooks.example/x',
    authorization: undefined,
  });
  assert.equal(
    splitBasicCredentials('https://u:%E0%A4%A@hooks.example/').authorization,
    `Basic ${Buffer.from('u:%E0%A4%A').toString('base64')}`,
  );
});
