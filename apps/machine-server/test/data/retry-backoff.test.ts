import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import { CaptureFileFormatError } from '../../src/data/capture-file-format.ts';
import { classifyUploadFailure, retryDelayMs } from '../../src/data/retry-backoff.ts';
import { MachineError } from '../../src/errors.ts';

test('upload failures: InvalidArgument and damaged files are terminal, Unavailable and socket errors offline', () => {
  assert.equal(classifyUploadFailure(new ConnectError('bad reading', Code.InvalidArgument)), 'terminal');
  assert.equal(
    classifyUploadFailure(new CaptureFileFormatError('/c/x.capture', 'truncated header')),
    'terminal',
  );
  assert.equal(classifyUploadFailure(new MachineError('InvalidArgument', 'x')), 'terminal');
  assert.equal(classifyUploadFailure(new ConnectError('down', Code.Unavailable)), 'offline');
  assert.equal(
    classifyUploadFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    'offline',
  );
  for (const code of [Code.Internal, Code.DeadlineExceeded, Code.ResourceExhausted, Code.Unauthenticated]) {
    assert.equal(classifyUploadFailure(new ConnectError('x', code)), 'retry', Code[code]);
  }
});

test('backoff: 200 ms doubling per consecutive failure up to 1 h, offline a flat 60 s, with jitter in [½, 1]', () => {
  const full = () => 1; // the upper end of the jitter
  const half = () => 0;
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((failures) => retryDelayMs('retry', failures, undefined, full)),
    [200, 400, 800, 1600, 3200],
  );
  assert.equal(retryDelayMs('retry', 1, undefined, half), 100);
  assert.equal(retryDelayMs('retry', 15, undefined, full), 3_276_800);
  assert.equal(retryDelayMs('retry', 16, undefined, full), 3_600_000);
  assert.equal(retryDelayMs('retry', 10_000, undefined, full), 3_600_000);
  assert.equal(retryDelayMs('offline', 1, undefined, full), 60_000);
  assert.equal(retryDelayMs('offline', 9, undefined, full), 60_000);
  assert.equal(retryDelayMs('offline', 9, undefined, half), 30_000);
});
