import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadCloudConfig } from '../../src/config/cloud-config.ts';

test('pipeline limits and scheduler settings: defaults, flags, environment, validation', () => {
  const defaults = loadCloudConfig([], {}).pipelines;
  assert.deepEqual(defaults.runLimits, {
    maxOutputDocuments: 10_000,
    maxOutputBytes: 64 * 1024 * 1024,
    runTimeoutMs: 300_000,
    querySlots: 2,
  });
  assert.equal(defaults.scheduler.maxAttemptsPerWindow, 3);
  assert.equal(defaults.scheduler.retryBackoffMs, 60_000);
  assert.equal(defaults.schedulerIntervalMs, 15_000);
  assert.equal(defaults.maxConcurrentRuns, 4);
  assert.equal(defaults.scheduler.runDelayMs, 60_000);
  assert.equal(defaults.scheduler.staleRunAfterMs, 600_000);
  assert.equal(defaults.scheduler.maxWindowsPerPass, 10);
  assert.equal(defaults.scheduler.lateDataLookbackMs, 86_400_000);

  const set = loadCloudConfig(
    ['--pipeline-max-output-documents', '500', '--pipeline-scheduler-interval-ms', '0'],
    {
      MCLOUD_PIPELINE_RUN_TIMEOUT_MS: '1000',
      MCLOUD_PIPELINE_STALE_RUN_AFTER_MS: '5000',
      MCLOUD_PIPELINE_RUN_DELAY_MS: '0',
      MCLOUD_PIPELINE_WINDOWS_PER_PASS: '3',
      MCLOUD_PIPELINE_MAX_OUTPUT_BYTES: '1024',
      MCLOUD_PIPELINE_LATE_DATA_LOOKBACK_MS: '0',
      MCLOUD_PIPELINE_MAX_CONCURRENT_RUNS: '2',
      MCLOUD_PIPELINE_QUERY_SLOTS: '3',
      MCLOUD_PIPELINE_MAX_ATTEMPTS: '5',
      MCLOUD_PIPELINE_RETRY_BACKOFF_MS: '0',
    },
  ).pipelines;
  assert.equal(set.runLimits.querySlots, 3);
  assert.equal(set.scheduler.maxAttemptsPerWindow, 5);
  assert.equal(set.scheduler.retryBackoffMs, 0);
  assert.equal(set.runLimits.maxOutputDocuments, 500);
  assert.equal(set.runLimits.maxOutputBytes, 1024);
  assert.equal(set.runLimits.runTimeoutMs, 1000);
  assert.equal(set.schedulerIntervalMs, 0);
  assert.equal(set.maxConcurrentRuns, 2);
  assert.equal(set.scheduler.staleRunAfterMs, 5000);
  assert.equal(set.scheduler.runDelayMs, 0);
  assert.equal(set.scheduler.maxWindowsPerPass, 3);
  assert.equal(set.scheduler.lateDataLookbackMs, 0);

  assert.throws(
    () => loadCloudConfig(['--pipeline-query-slots', '8'], {}),
    /--pipeline-query-slots must be less than the 8 query slots of a replica \(got 8\)/,
  );
  assert.throws(
    () => loadCloudConfig(['--pipeline-max-attempts', '0'], {}),
    /--pipeline-max-attempts must be a positive integer \(got "0"\)/,
  );
  assert.throws(
    () => loadCloudConfig(['--pipeline-max-output-documents', '0'], {}),
    /--pipeline-max-output-documents must be a positive integer \(got "0"\)/,
  );
  assert.throws(
    () => loadCloudConfig(['--pipeline-run-delay-ms=-1'], {}),
    /--pipeline-run-delay-ms must be a non-negative integer/,
  );
  assert.throws(
    () => loadCloudConfig(['--pipeline-run-timeout-ms', '600000'], {}),
    (error: Error) =>
      error instanceof ConfigError &&
      /--pipeline-stale-run-after-ms \(600000\) must be more than --pipeline-run-timeout-ms \(600000\)/.test(
        error.message,
      ),
  );
});
