import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadCloudConfig } from '../../src/config/cloud-config.ts';

test('query limits and database access: defaults, flags, environment, validation', () => {
  const defaults = loadCloudConfig([], {});
  assert.deepEqual(defaults.queryLimits, { timeoutMs: 30_000, maxRows: 100_000, maxBytes: 16 * 1024 * 1024 });
  assert.equal(defaults.databaseListenHost, '127.0.0.1');
  assert.equal(defaults.databasePublicHost, undefined);
  assert.equal(defaults.databasePublicPort, undefined);
  const set = loadCloudConfig(
    [
      '--query-timeout-ms',
      '5000',
      '--database-public-host',
      'db.example.com',
      '--database-listen-host',
      '0.0.0.0',
    ],
    { MCLOUD_QUERY_MAX_ROWS: '10', MCLOUD_DATABASE_PUBLIC_PORT: '15432' },
  );
  assert.equal(set.queryLimits.timeoutMs, 5000);
  assert.equal(set.queryLimits.maxRows, 10);
  assert.equal(set.databasePublicHost, 'db.example.com');
  assert.equal(set.databasePublicPort, 15432);
  assert.equal(set.databaseListenHost, '0.0.0.0');
  assert.throws(() => loadCloudConfig(['--query-max-rows', '0'], {}), ConfigError);
  assert.throws(
    () => loadCloudConfig(['--query-timeout-ms', 'soon'], {}),
    /--query-timeout-ms must be a positive integer/,
  );
  assert.throws(() => loadCloudConfig(['--database-public-port', '70000'], {}), /between 1 and 65535/);
});
