import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import {
  listenAddressesFor,
  startEmbeddedPostgres,
} from '../../src/infra/postgres/embedded-postgres-server.ts';

// The embedded PostgreSQL on a configured address for BI tools: non-loopback clients log in with a
// password, except the superuser, who stays loopback-only.

test('listen addresses always include loopback', () => {
  assert.equal(listenAddressesFor(undefined), '127.0.0.1');
  assert.equal(listenAddressesFor('127.0.0.1'), '127.0.0.1');
  assert.equal(listenAddressesFor('0.0.0.0'), '0.0.0.0');
  assert.equal(listenAddressesFor('10.1.2.3'), '127.0.0.1,10.1.2.3');
  assert.throws(() => listenAddressesFor("1.2.3.4'; evil"), /invalid database listen address/);
});

const externalAddress = Object.values(networkInterfaces())
  .flat()
  .find((address) => address?.family === 'IPv4' && !address.internal)?.address;

test(
  'listening on 0.0.0.0: a login role connects over the external address, the superuser cannot',
  {
    skip: externalAddress ? false : 'no non-loopback IPv4 address on this machine',
  },
  async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-listen-'));
    const server = await startEmbeddedPostgres({ dataDir, databaseName: 'listen', listenHost: '0.0.0.0' });
    try {
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query("CREATE ROLE bi_reader LOGIN PASSWORD 'reader password'");
      await admin.end();
      const external = new URL(server.url);
      external.hostname = externalAddress as string;
      external.search = ''; // over TCP, not the cloud's own unix socket
      const superuser = new pg.Client({ connectionString: external.toString() });
      await assert.rejects(superuser.connect(), /rejects connection|no pg_hba.conf entry/);
      external.username = 'bi_reader';
      external.password = 'reader password';
      const reader = new pg.Client({ connectionString: external.toString() });
      await reader.connect();
      assert.equal((await reader.query('SELECT current_user AS u')).rows[0].u, 'bi_reader');
      await reader.end();
    } finally {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
