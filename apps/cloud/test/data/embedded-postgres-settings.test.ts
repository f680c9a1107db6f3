import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';

// scripts/run-tests.ts starts the embedded PostgreSQL unless TEST_DATABASE_URL names an external server
// (whose own settings then apply: nothing to check); either way MCLOUD_TEST_ADMIN_URL points at it.
const embeddedUrl = process.env.TEST_DATABASE_URL ? undefined : process.env.MCLOUD_TEST_ADMIN_URL;

test(
  'the embedded PostgreSQL keeps every durability setting and checkpoints less often',
  {
    skip: embeddedUrl ? false : 'not running against the embedded PostgreSQL',
  },
  async () => {
    const client = new pg.Client({ connectionString: embeddedUrl });
    await client.connect();
    try {
      const result = await client.query<{ name: string; setting: string }>(
        `SELECT name, current_setting(name) AS setting FROM unnest(ARRAY['fsync', 'full_page_writes',
         'synchronous_commit', 'wal_level', 'max_wal_size', 'checkpoint_timeout']) AS name`,
      );
      const settings = Object.fromEntries(result.rows.map((row) => [row.name, row.setting]));
      assert.deepEqual(settings, {
        fsync: 'on',
        full_page_writes: 'on',
        synchronous_commit: 'on',
        wal_level: 'replica',
        max_wal_size: '4GB',
        checkpoint_timeout: '15min',
      });
    } finally {
      await client.end();
    }
  },
);
