import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  configureDatabaseUser,
  type DatabaseUserDeps,
  getDatabaseConnection,
} from '../../src/domain/data/database-users/database-users.ts';
import { ownerOf as owner } from '../support/owner-principal.ts';
import { createOwnAndForeignParts, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// The per-organization database user, verified with the `pg` client and `psql` logging in over TCP with
// the URI GetDatabaseConnection returns: own rows only, nothing of another organization, no writes.

let t: TestCloud;
let deps: DatabaseUserDeps;
let orgA: string;
let orgB: string;
const base = Date.parse('2025-03-10T00:00:00Z');

before(async () => {
  t = await startTestCloud();
  deps = { db: t.cloud.deps.db, clock: t.cloud.deps.clock, config: t.cloud.deps.config };
  const parts = await createOwnAndForeignParts(t, { own: 'a', foreign: 'b', foreignOrganization: 'b' });
  orgA = parts.own.organizationId;
  orgB = parts.foreign.organizationId;
  await seedReadings(t.cloud, parts.own, { componentName: 'own' }, [
    { capturedAtMs: base, data: { readings: { temperature: 20 } } },
    { capturedAtMs: base + 1000, data: { readings: { temperature: 21 } } },
  ]);
  await seedReadings(t.cloud, parts.foreign, { componentName: 'secret-b' }, [
    { capturedAtMs: base, data: { readings: { temperature: 99 } } },
  ]);
});

after(async () => {
  await t?.stop();
});

async function connectAs(uri: string, password: string): Promise<pg.Client> {
  const url = new URL(uri);
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  return client;
}

test('GetDatabaseConnection: URI without password, has_database_user before and after', async () => {
  const before = await getDatabaseConnection(deps, owner(orgA), { organizationId: orgA });
  assert.equal(before.hasDatabaseUser, false);
  assert.match(
    before.uri,
    /^postgresql:\/\/mcloud_org_[0-9a-f]{32}@127\.0\.0\.1:\d+\/mcloud_test_[0-9a-f]+$/,
  );
  assert.equal(before.hostname, `127.0.0.1:${new URL(before.uri).port}`);
  await configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'first password 1' });
  const after = await getDatabaseConnection(deps, owner(orgA), { organizationId: orgA });
  assert.equal(after.hasDatabaseUser, true);
  assert.ok(!after.uri.includes('first password'));
  const configured = await getDatabaseConnection(
    { ...deps, config: { databasePublicHost: 'db.example.com', databasePublicPort: 5432 } },
    owner(orgA),
    { organizationId: orgA },
  );
  assert.equal(configured.hostname, 'db.example.com');
  assert.match(configured.uri, /^postgresql:\/\/mcloud_org_[0-9a-f]{32}@db\.example\.com:5432\//);
});

test('pg client as the database user: own rows, nothing foreign, no writes, no escape', async () => {
  await configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'first password 1' });
  const { uri } = await getDatabaseConnection(deps, owner(orgA), { organizationId: orgA });
  const client = await connectAs(uri, 'first password 1');
  try {
    const seen = await client.query(
      'SELECT organization_id, component_name FROM readings ORDER BY time_received',
    );
    assert.deepEqual(
      seen.rows.map((row) => [row.organization_id, row.component_name]),
      [
        [orgA, 'own'],
        [orgA, 'own'],
      ],
    );
    const qualified = await client.query('SELECT count(*)::int AS n FROM sensorData.readings');
    assert.equal(qualified.rows[0].n, 2);
    const foreign = await client.query('SELECT count(*)::int AS n FROM readings WHERE organization_id = $1', [
      orgB,
    ]);
    assert.equal(foreign.rows[0].n, 0);
    // A forged token does not help: a database user is bound to its organization by its login name.
    await client.query(`SET mcloud.query_token = '${orgB}.${'0'.repeat(64)}'`);
    assert.equal((await client.query('SELECT count(*)::int AS n FROM readings')).rows[0].n, 2);
    for (const sql of [
      'SELECT * FROM public.readings',
      'SELECT * FROM public.capture_sources',
      'SELECT * FROM mcloud_private.query_secret',
      `SELECT mcloud_private.organization_token('${orgB}')`,
      "SELECT set_config('role', 'postgres', false)",
      'SET ROLE postgres',
      // The owner of the views, the role the row-level security policies apply to (migration 0024).
      'SET ROLE mcloud_query_reader',
      "SELECT pg_read_file('/etc/passwd')",
    ]) {
      await assert.rejects(client.query(sql), /permission denied/, sql);
    }
    for (const sql of [
      "DELETE FROM readings WHERE component_name = 'own'",
      "UPDATE readings SET component_name = 'x'",
      "INSERT INTO public.readings (organization_id) VALUES ('00000000-0000-0000-0000-000000000000')",
      'CREATE TABLE stolen (x int)',
    ]) {
      await assert.rejects(
        client.query(sql),
        /read-only transaction|permission denied|cannot (delete|update)/,
        sql,
      );
    }
    // Row-level security cannot be switched off by the user: the query fails instead of showing all rows.
    await client.query('SET row_security = off');
    await assert.rejects(
      client.query('SELECT count(*) FROM readings'),
      /would be affected by row-level security policy/,
    );
    await client.query('RESET row_security');
    await client.query('SET default_transaction_read_only = off');
    await assert.rejects(
      client.query("DELETE FROM readings WHERE component_name = 'own'"),
      /permission denied|cannot delete/,
    );
    await assert.rejects(client.query('DELETE FROM public.readings'), /permission denied/);
    await assert.rejects(client.query('CREATE TABLE public.stolen (x int)'), /permission denied/);
  } finally {
    await client.end();
  }
  const counts = await t.cloud.deps.db.query('SELECT count(*)::int AS n FROM readings');
  assert.equal(counts.rows[0].n, 3);
});

test('configuring again resets the password; each organization has its own user', async () => {
  await configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'first password 1' });
  await configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'second password 2' });
  const { uri } = await getDatabaseConnection(deps, owner(orgA), { organizationId: orgA });
  await assert.rejects(connectAs(uri, 'first password 1'), /password authentication failed/);
  const client = await connectAs(uri, 'second password 2');
  await client.end();
  await configureDatabaseUser(deps, owner(orgB), { organizationId: orgB, password: "b's password" });
  const b = await getDatabaseConnection(deps, owner(orgB), { organizationId: orgB });
  const clientB = await connectAs(b.uri, "b's password");
  try {
    const seen = await clientB.query('SELECT DISTINCT organization_id, component_name FROM readings');
    assert.deepEqual(seen.rows, [{ organization_id: orgB, component_name: 'secret-b' }]);
  } finally {
    await clientB.end();
  }
});

test('psql as the database user', async () => {
  await configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'psql password 3' });
  const { uri } = await getDatabaseConnection(deps, owner(orgA), { organizationId: orgA });
  const run = (sql: string) =>
    promisify(execFile)('psql', [uri, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
      env: { ...process.env, PGPASSWORD: 'psql password 3', PGCONNECT_TIMEOUT: '5' },
    });
  const counted = await run('SELECT count(*), count(DISTINCT organization_id) FROM readings');
  assert.equal(counted.stdout.trim(), '2|1');
  await assert.rejects(run('DELETE FROM readings'), /read-only transaction|permission denied|cannot delete/);
  await assert.rejects(run('SELECT * FROM public.readings'), /permission denied/);
});

test('input checks: password length and characters, owner role, organization ID', async () => {
  await assert.rejects(
    configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'short' }),
    /password: must be 8 to 128 characters long \(got 5\)/,
  );
  await assert.rejects(
    configureDatabaseUser(deps, owner(orgA), { organizationId: orgA, password: 'pässwörd-long' }),
    /password: may contain only printable ASCII/,
  );
  await assert.rejects(
    configureDatabaseUser(deps, owner(orgA), { organizationId: orgB, password: 'long enough 1' }),
    /lacks the organization owner role/,
  );
  await assert.rejects(
    getDatabaseConnection(deps, owner(orgA), { organizationId: 'not-a-uuid' }),
    /organization_id: must be a UUID/,
  );
});
