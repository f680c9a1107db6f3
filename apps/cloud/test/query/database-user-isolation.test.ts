import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { BSON, deserialize } from 'bson';
import pg from 'pg';
import { endOverdueDatabaseUserSessions } from '../../src/domain/data/database-users/database-user-watchdog.ts';
import {
  configureDatabaseUser,
  getDatabaseConnection,
} from '../../src/domain/data/database-users/database-users.ts';
import { createCustomIndex } from '../../src/domain/data/indexes/custom-indexes.ts';
import {
  defaultQueryLimits,
  runOrganizationQuery,
} from '../../src/domain/data/query-access/organization-query.ts';
import {
  materializeAllReadingRollups,
  materializeReadingRollups,
} from '../../src/domain/data/rollups/reading-rollup-materializer.ts';
import { hotStorageConfig } from '../e2e/hot-storage-fixtures.ts';
import { ownerOf as owner } from '../support/owner-principal.ts';
import { createOwnAndForeignParts, type SeedPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// Every relation a per-organization database user (ConfigureDatabaseUser) or the query role can read,
// including the objects of the reading rollups (migrations 0023, 0026, 0027: sources, buckets with their
// path statistics, marks,
// bucket rows) and of row-level security (0024), with another organization's rows present in each of them
// (readings, hot store, pipeline sink, materialized rollups, dirty marks, custom expression indexes with
// statistics): the user sees its own rows, nothing of the other organization — neither through the views
// nor through the tables, partitions, statistics or activity catalogs psql users reach for — and writes
// nothing. Checked with `pg`, `psql` and the query role TabularDataBySQL/MQL run as.

let t: TestCloud;
let orgA: string;
let orgB: string;
let partB: SeedPart;
let uri: string;
const password = 'isolation password 1';
let ownSources: Set<string>;
let foreignSources: Set<string>;

/** What the database user of organization A may read (anything else appearing here must be reviewed). */
const readableViews = [
  'sensordata.hot_readings',
  'sensordata.pipeline_readings',
  'sensordata.pipeline_sink',
  'sensordata.reading_bucket_rows',
  'sensordata.reading_rollup_buckets',
  'sensordata.reading_rollup_marks',
  'sensordata.reading_sources',
  'sensordata.readings',
];

async function insertSinkOutput(organizationId: string, docs: Record<string, unknown>[]): Promise<void> {
  const id = randomUUID();
  const now = new Date();
  const db = t.cloud.deps.db;
  await db.query(
    `INSERT INTO data_pipelines (id, organization_id, name, stages, schedule, enable_backfill, data_source_type,
       enabled, created_at, updated_at) VALUES ($1, $2, 'sink', '{}', '0 * * * *', false, 'standard', true, $3, $3)`,
    [id, organizationId, now],
  );
  await db.query(
    `INSERT INTO pipeline_sink (organization_id, pipeline_id, run_id, doc)
     SELECT $1, $2, $3, d FROM unnest($4::jsonb[]) AS d`,
    [organizationId, id, randomUUID(), docs.map((doc) => JSON.stringify(doc))],
  );
}

before(async () => {
  t = await startTestCloud();
  const db = t.cloud.deps.db;
  const signal = AbortSignal.timeout(60_000);
  const parts = await createOwnAndForeignParts(t, {
    own: 'own',
    foreign: 'victim',
    foreignOrganization: 'victim',
  });
  const partA = parts.own;
  partB = parts.foreign;
  orgA = partA.organizationId;
  orgB = partB.organizationId;
  // Both parts keep 24 h of their sensor in the hot store.
  await db.query('UPDATE robot_parts SET config = $2 WHERE id = $1', [
    partA.partId,
    hotStorageConfig({ own: 24 }),
  ]);
  await db.query('UPDATE robot_parts SET config = $2 WHERE id = $1', [
    partB.partId,
    hotStorageConfig({ 'secret-b': 24 }),
  ]);
  const now = Date.now();
  const hour = 3_600_000;
  await seedReadings(t.cloud, partA, { componentName: 'own' }, [
    { capturedAtMs: now - 2 * hour, data: { readings: { temperature: 20 } } },
  ]);
  await seedReadings(t.cloud, partB, { componentName: 'secret-b', tags: ['TOPSECRET-B'] }, [
    ...Array.from({ length: 50 }, (_, i) => ({
      capturedAtMs: now - 2 * hour + i,
      data: { secret: 'TOPSECRET-B', victim_key: 7 },
    })),
  ]);
  // Rollup buckets (with path statistics) for both organizations, then newer readings: dirty marks for both.
  await materializeAllReadingRollups(db, signal);
  await seedReadings(t.cloud, partA, { componentName: 'own' }, [
    { capturedAtMs: now - 60_000, data: { readings: { temperature: 21 } } },
  ]);
  await seedReadings(t.cloud, partB, { componentName: 'secret-b', tags: ['TOPSECRET-B'] }, [
    { capturedAtMs: now - 60_000, data: { secret: 'TOPSECRET-B', victim_key: 8 } },
  ]);
  await insertSinkOutput(orgA, [{ own: 1 }]);
  await insertSinkOutput(
    orgB,
    Array.from({ length: 20 }, () => ({ secret: 'TOPSECRET-B' })),
  );
  // Custom expression indexes of organization B (their statistics hold B's values after ANALYZE).
  await createCustomIndex(
    { db, clock: t.cloud.deps.clock },
    owner(orgB),
    { organizationId: orgB, collection: 'hot_store' },
    [BSON.serialize({ keys: { 'data.secret': 1 }, options: { name: 'victim_hot' } })],
    signal,
  );
  await createCustomIndex(
    { db, clock: t.cloud.deps.clock },
    owner(orgB),
    { organizationId: orgB, collection: 'pipeline_sink', pipelineName: 'sink' },
    [BSON.serialize({ keys: { secret: 1 }, options: { name: 'victim_sink' } })],
    signal,
  );
  await db.query('ANALYZE');
  const sources = await db.query<{ id: string; organization_id: string }>(
    'SELECT id::text, organization_id::text FROM capture_sources',
  );
  ownSources = new Set(sources.rows.filter((row) => row.organization_id === orgA).map((row) => row.id));
  foreignSources = new Set(sources.rows.filter((row) => row.organization_id === orgB).map((row) => row.id));
  await configureDatabaseUser({ db, clock: t.cloud.deps.clock, config: t.cloud.deps.config }, owner(orgA), {
    organizationId: orgA,
    password,
  });
  uri = (
    await getDatabaseConnection({ db, clock: t.cloud.deps.clock, config: t.cloud.deps.config }, owner(orgA), {
      organizationId: orgA,
    })
  ).uri;
});

after(async () => {
  await t?.stop();
});

async function connect(): Promise<pg.Client> {
  const url = new URL(uri);
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  return client;
}

/** `work` with a `pg` connection of organization A's database user, closed afterwards. */
async function asDatabaseUser<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function psql(sql: string) {
  return promisify(execFile)('psql', [uri, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
    env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: '5' },
  });
}

/** The first trace of organization B in a text (its ID, names, tags, values, keys), if any. */
function leak(text: string): string | undefined {
  return [orgB, partB.partId, partB.robotId, 'secret-b', 'TOPSECRET-B', 'victim'].find((marker) =>
    text.includes(marker),
  );
}

/** Rows as JSON objects; a row naming a capture source must name one of organization A. */
function assertOwnRows(relation: string, rows: readonly Record<string, unknown>[]): void {
  assert.ok(rows.length > 0, `${relation}: the user's own rows are visible`);
  const text = JSON.stringify(rows);
  assert.equal(leak(text), undefined, `${relation} leaks organization B: ${text.slice(0, 300)}`);
  for (const row of rows) {
    if ('source_id' in row) {
      const source = String(row.source_id);
      assert.ok(ownSources.has(source), `${relation}: source ${source} is not organization A's`);
      assert.ok(!foreignSources.has(source));
    }
    if ('organization_id' in row) assert.equal(row.organization_id, orgA, relation);
  }
}

test('the database user may read exactly the organization-scoped views, nothing else', async () => {
  await asDatabaseUser(async (client) => {
    const readable = await client.query<{ name: string }>(
      `SELECT n.nspname || '.' || c.relname AS name
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
          AND (has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'))
        ORDER BY 1`,
    );
    assert.deepEqual(
      readable.rows.map((row) => row.name),
      readableViews,
    );
  });
});

test('pg: each view shows organization A its own rows (as the query role does) and nothing of B', async () => {
  await asDatabaseUser(async (client) => {
    for (const relation of readableViews) {
      const seen = await client.query<{ j: Record<string, unknown> }>(
        `SELECT to_jsonb(x) AS j FROM ${relation} x`,
      );
      const rows = seen.rows.map((row) => row.j);
      assertOwnRows(relation, rows);
      // The query role TabularDataBySQL / TabularDataByMQL run as, with organization A's token: same rows.
      const asQueryRole = await runOrganizationQuery(
        { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
        {
          organizationId: orgA,
          sql: `SELECT to_jsonb(x)::text AS j FROM ${relation} x`,
          limits: defaultQueryLimits,
        },
        AbortSignal.timeout(10_000),
      );
      const viaRole = asQueryRole.documents.map((bytes) => JSON.parse(String(deserialize(bytes).j)));
      assert.deepEqual(
        viaRole.map((row) => JSON.stringify(row)).sort(),
        rows.map((row) => JSON.stringify(row)).sort(),
        relation,
      );
    }
    // Complete, not only clean: every own reading, hot row and sink document is there.
    const counts = await client.query(
      `SELECT (SELECT count(*) FROM readings)::int AS readings, (SELECT count(*) FROM hot_readings)::int AS hot,
              (SELECT count(*) FROM pipeline_sink)::int AS sink,
              (SELECT sum(row_count) FROM reading_rollup_buckets)::int AS rolled_up`,
    );
    assert.deepEqual(counts.rows[0], { readings: 2, hot: 2, sink: 1, rolled_up: 1 });
  });
});

test('psql: the views show nothing of organization B', async () => {
  for (const relation of readableViews) {
    const { stdout } = await psql(`SELECT to_jsonb(x) FROM ${relation} x`);
    assert.ok(stdout.trim().length > 0, relation);
    assert.equal(leak(stdout), undefined, `${relation}: ${stdout.slice(0, 300)}`);
    const rows = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assertOwnRows(relation, rows);
  }
});

test('every table, partition and sequence is refused, through pg and through the query role', async () => {
  await asDatabaseUser(async (client) => {
    const relations = await client.query<{ name: string; kind: string }>(
      `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name, c.relkind::text AS kind
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'sensordata')
          AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
        ORDER BY 1`,
    );
    const names = relations.rows.map((row) => row.name);
    for (const expected of [
      'public.readings',
      'public.capture_sources',
      'public.hot_readings',
      'public.pipeline_sink',
      'public.data_pipeline_runs',
      'public.reading_rollup_buckets',
      'public.reading_rollup_marks',
      'mcloud_private.query_secret',
      'mcloud_private.database_users',
    ]) {
      assert.ok(names.includes(expected), `${expected} is among the relations checked`);
    }
    assert.ok(
      names.some((name) => /^public\.readings_\w+/.test(name)),
      'a partition of readings is among the relations checked',
    );
    for (const { name, kind } of relations.rows) {
      await assert.rejects(client.query(`SELECT * FROM ${name} LIMIT 1`), /permission denied/, name);
      if (kind === 'S')
        await assert.rejects(client.query(`SELECT nextval('${name}')`), /permission denied/, name);
      await assert.rejects(
        runOrganizationQuery(
          { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
          { organizationId: orgA, sql: `SELECT * FROM ${name} LIMIT 1`, limits: defaultQueryLimits },
          AbortSignal.timeout(10_000),
        ),
        (error: { code?: string }) => error.code === 'PermissionDenied',
        name,
      );
    }
  });
});

test('no writes through any view, even with read-only transactions switched off', async () => {
  await asDatabaseUser(async (client) => {
    await client.query('SET default_transaction_read_only = off');
    for (const relation of readableViews) {
      const second = await client.query<{ name: string }>(
        'SELECT quote_ident(attname) AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum = 2',
        [relation],
      );
      const column = second.rows[0]?.name;
      for (const sql of [
        `DELETE FROM ${relation}`,
        `UPDATE ${relation} SET ${column} = ${column}`,
        `INSERT INTO ${relation} DEFAULT VALUES`,
        `TRUNCATE ${relation}`,
      ]) {
        await assert.rejects(client.query(sql), /permission denied|cannot|is not a table/, sql);
      }
    }
    // No temporary tables either (migration 0030), and sorts spill at most 1 GB per session.
    await assert.rejects(
      client.query('CREATE TEMP TABLE hoard AS SELECT g FROM generate_series(1, 10) g'),
      /permission denied to create temporary tables/,
    );
    assert.equal((await client.query("SELECT current_setting('temp_file_limit') AS l")).rows[0].l, '1GB');
    await assert.rejects(client.query("SET temp_file_limit = '100GB'"), /permission denied/);
    for (const sql of [
      'CREATE TABLE sensordata.stolen (x int)',
      'CREATE VIEW sensordata.stolen AS SELECT 1',
      'CREATE FUNCTION sensordata.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$',
      'CREATE TABLE public.stolen (x int)',
      'ALTER VIEW sensordata.reading_rollup_marks OWNER TO CURRENT_USER',
      'GRANT SELECT ON public.reading_rollup_buckets TO CURRENT_USER',
    ]) {
      await assert.rejects(client.query(sql), /permission denied|must be owner/, sql);
    }
  });
  const counts = await t.cloud.deps.db.query(
    `SELECT (SELECT count(*) FROM readings)::int AS readings, (SELECT count(*) FROM pipeline_sink)::int AS sink,
            (SELECT count(*) FROM reading_rollup_marks WHERE organization_id = $1)::int > 0 AS marked`,
    [orgA],
  );
  assert.deepEqual(counts.rows[0], { readings: 53, sink: 21, marked: true });
});

test('catalog tricks: statistics, extended statistics and other sessions show nothing of B', async () => {
  // Organization B's values are in the statistics of the tables and of its expression indexes.
  const stats = await t.cloud.deps.db.query(
    "SELECT count(*)::int AS n FROM pg_stats WHERE most_common_vals::text LIKE '%TOPSECRET-B%'",
  );
  assert.ok(stats.rows[0].n > 0, 'the statistics hold organization B values (else this test proves nothing)');
  const probes = [
    "SELECT schemaname, tablename, attname, most_common_vals::text, histogram_bounds::text FROM pg_stats WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    "SELECT * FROM pg_stats WHERE most_common_vals::text LIKE '%TOPSECRET%' OR histogram_bounds::text LIKE '%TOPSECRET%'",
    "SELECT * FROM pg_stats_ext WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    "SELECT * FROM pg_stats_ext_exprs WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
  ];
  await asDatabaseUser(async (client) => {
    for (const sql of probes) {
      const seen = await client.query(sql);
      assert.deepEqual(seen.rows, [], sql);
      const { stdout } = await psql(sql);
      assert.equal(stdout.trim(), '', sql);
    }
    for (const sql of [
      'SELECT * FROM pg_statistic',
      'SELECT * FROM pg_statistic_ext_data',
      'SELECT * FROM pg_authid',
      "SELECT pg_read_file('postgresql.conf')",
      "SELECT lo_import('/etc/passwd')",
    ]) {
      await assert.rejects(client.query(sql), /permission denied/, sql);
    }
    // Another session's statement (the cloud running B's query) is hidden from the activity view.
    const busy = t.cloud.deps.db.query("SELECT 'TOPSECRET-B' AS marker, pg_sleep(1.5)");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const activity = await client.query(
      'SELECT usename, query, backend_type FROM pg_stat_activity WHERE pid <> pg_backend_pid()',
    );
    await busy;
    assert.ok(activity.rows.length > 0);
    assert.equal(leak(JSON.stringify(activity.rows)), undefined, JSON.stringify(activity.rows).slice(0, 300));
  });
  // The query role, too (TabularDataBySQL refuses catalogs before they reach the database).
  for (const sql of probes) {
    const result = await runOrganizationQuery(
      { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
      { organizationId: orgA, sql, limits: defaultQueryLimits },
      AbortSignal.timeout(10_000),
    );
    assert.deepEqual(result.documents, [], sql);
  }
});

test('no advisory locks: a database user cannot stall the cloud passes of every organization', async () => {
  await asDatabaseUser(async (client) => {
    for (const sql of [
      // The rollup materializer's key, and the other forms.
      'SELECT pg_try_advisory_lock(7204231)',
      'SELECT pg_advisory_lock(1)',
      'SELECT pg_advisory_lock_shared(1)',
      'SELECT pg_try_advisory_lock(1, 2)',
      'SELECT pg_advisory_xact_lock(1)',
      'SELECT pg_try_advisory_xact_lock_shared(1)',
    ]) {
      await assert.rejects(client.query(sql), /permission denied for function pg_/, sql);
    }
  });
  // The cloud itself still takes them: a materializer pass runs.
  const pass = await materializeReadingRollups(t.cloud.deps.db, AbortSignal.timeout(10_000));
  assert.equal(pass.ran, true);
});

test('a session idle inside a transaction is ended: it would block the next readings partition', async () => {
  await asDatabaseUser(async (client) => {
    const shown = await client.query(
      "SELECT current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('statement_timeout') AS st",
    );
    assert.deepEqual(shown.rows[0], { idle: '1min', st: '1min' });
  });
  // What the setting prevents (shortened here): an open transaction holds its lock on readings until ended.
  const idle = await connect();
  idle.on('error', () => {});
  await idle.query("SET idle_in_transaction_session_timeout = '500ms'");
  await idle.query('BEGIN');
  await idle.query('SELECT count(*) FROM readings');
  const admin = await t.cloud.deps.db.connect();
  try {
    await admin.query("SET lock_timeout = '5s'");
    const began = performance.now();
    await admin.query(
      "CREATE TABLE IF NOT EXISTS readings_y2031m01 PARTITION OF readings FOR VALUES FROM ('2031-01-01') TO ('2031-02-01')",
    );
    const waitedMs = performance.now() - began;
    assert.ok(waitedMs >= 300 && waitedMs < 4_000, `the partition waited ${waitedMs} ms`);
  } finally {
    await admin.query('RESET lock_timeout');
    admin.release();
    await idle.end().catch(() => {});
  }
});

test('the watchdog ends a database-user session that overrides its timeouts to hold readings', async () => {
  const limits = { maxStatementMs: 300, maxIdleInTransactionMs: 300 };
  const idle = await connect();
  const busy = await connect();
  idle.on('error', () => {});
  busy.on('error', () => {});
  const admin = await t.cloud.deps.db.connect();
  try {
    for (const client of [idle, busy]) {
      await client.query('SET idle_in_transaction_session_timeout = 0; SET statement_timeout = 0');
    }
    await idle.query('BEGIN');
    await idle.query('SELECT count(*) FROM readings');
    const sleeping = busy.query('SELECT pg_sleep(30) FROM readings LIMIT 1').then(
      () => 'finished',
      (error: Error) => error.message,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The cloud's own sessions and young ones are left alone.
    assert.equal(
      await endOverdueDatabaseUserSessions(t.cloud.deps.db, {
        maxStatementMs: 60_000,
        maxIdleInTransactionMs: 60_000,
      }),
      0,
    );
    assert.equal(await endOverdueDatabaseUserSessions(t.cloud.deps.db, limits), 2);
    assert.match(await sleeping, /terminat/);
    await assert.rejects(idle.query('SELECT 1'));
    // The lock is gone: the next partition is created at once.
    await admin.query("SET lock_timeout = '2s'");
    await admin.query(
      "CREATE TABLE IF NOT EXISTS readings_y2031m02 PARTITION OF readings FOR VALUES FROM ('2031-02-01') TO ('2031-03-01')",
    );
  } finally {
    await admin.query('RESET lock_timeout');
    admin.release();
    await idle.end().catch(() => {});
    await busy.end().catch(() => {});
  }
});
