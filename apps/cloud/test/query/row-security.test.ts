import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { DatabaseClient } from '../../src/infra/postgres/database.ts';
import { createOwnAndForeignParts, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// Row-level security behind `sensordata.readings` and `sensordata.pipeline_readings` (migration 0024): the
// catalog facts the isolation rests on (who owns the views, what that role may do, which policies exist),
// and what a session of the query role can and cannot do about them. The attacks through user SQL are in
// sql-attacks.ts (sql-security.test.ts runs them).

let t: TestCloud;
let orgA: string;
let orgB: string;
const base = Date.parse('2025-03-10T00:00:00Z');
const scopedViews = ['readings', 'pipeline_readings'];

before(async () => {
  t = await startTestCloud();
  const parts = await createOwnAndForeignParts(t, { own: 'a', foreign: 'b', foreignOrganization: 'other' });
  orgA = parts.own.organizationId;
  orgB = parts.foreign.organizationId;
  await seedReadings(t.cloud, parts.own, { componentName: 'own' }, [
    { capturedAtMs: base, data: { readings: { temperature: 20 } } },
  ]);
  await seedReadings(t.cloud, parts.foreign, { componentName: 'secret-b' }, [
    { capturedAtMs: base, data: { readings: { temperature: 99 } } },
    { capturedAtMs: base + 1000, data: { readings: { temperature: 98 } } },
  ]);
});

after(async () => {
  await t?.stop();
});

/** Runs `work` in a transaction as the query role holding organization A's signed token; rolls back. */
async function asQueryRole<T>(work: (client: DatabaseClient) => Promise<T>): Promise<T> {
  const client = await t.cloud.deps.db.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `SELECT set_config('mcloud.query_token', mcloud_private.organization_token('${orgA}'), true)`,
    );
    await client.query('SET LOCAL ROLE mcloud_query');
    return await work(client);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/** The plan an EXPLAIN statement prints over the query role's views (search_path set), as one text. */
async function planOf(client: DatabaseClient, sql: string): Promise<string> {
  await client.query('SET LOCAL search_path = sensordata, pg_catalog');
  const result = await client.query<{ 'QUERY PLAN': string }>(sql);
  return result.rows.map((row) => row['QUERY PLAN']).join('\n');
}

async function countOf(client: DatabaseClient, sql: string): Promise<number> {
  return (await client.query<{ n: number }>(sql)).rows[0]?.n ?? -1;
}

test('every view over the scoped tables belongs to mcloud_query_reader, which row-level security binds', async () => {
  const db = t.cloud.deps.db;
  // Every view of schema sensordata (the query role's) that reads public.readings or public.capture_sources
  // must either be owned by the role the policies apply to, or be a security-barrier view with its own
  // organization condition (hot_readings, 0011). Owned by the tables' owner or a superuser without that
  // condition, it would show every organization (next test).
  const views = await db.query<{ view: string; owner: string; barrier: boolean; filtered: boolean }>(
    `SELECT DISTINCT v.relname AS view, pg_get_userbyid(v.relowner) AS owner,
            coalesce('security_barrier=true' = ANY (v.reloptions), false) AS barrier,
            pg_get_viewdef(v.oid) LIKE '%= ( SELECT mcloud_private.query_organization()%' AS filtered
       FROM pg_rewrite w
       JOIN pg_class v ON v.oid = w.ev_class AND v.relkind = 'v'
       JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
      WHERE d.refobjid IN ('public.readings'::regclass, 'public.capture_sources'::regclass)
        AND v.relnamespace = 'sensordata'::regnamespace
      ORDER BY 1`,
  );
  for (const view of scopedViews) {
    assert.ok(
      views.rows.some((row) => row.view === view && row.owner === 'mcloud_query_reader'),
      `${view}: ${JSON.stringify(views.rows)}`,
    );
  }
  for (const row of views.rows) {
    assert.ok(
      row.owner === 'mcloud_query_reader' || (row.barrier && row.filtered),
      `view sensordata.${row.view} (owner ${row.owner}) is neither under row-level security nor filtered`,
    );
  }
  const role = await db.query(
    `SELECT rolsuper, rolbypassrls, rolcanlogin, rolinherit,
            (SELECT count(*)::int FROM pg_class c WHERE c.relowner = r.oid AND c.relkind IN ('r', 'p')) AS tables,
            (SELECT count(*)::int FROM pg_auth_members m WHERE m.member = r.oid) AS memberships
       FROM pg_roles r WHERE rolname = 'mcloud_query_reader'`,
  );
  assert.deepEqual(role.rows, [
    {
      rolsuper: false,
      rolbypassrls: false,
      rolcanlogin: false,
      rolinherit: false,
      tables: 0,
      memberships: 0,
    },
  ]);
  const tables = await db.query(
    `SELECT c.relname, c.relrowsecurity,
            (SELECT array_agg(p.polname || ':' || p.polcmd::text || ':' || pg_get_expr(p.polqual, p.polrelid) ORDER BY p.polname)
               FROM pg_policy p WHERE p.polrelid = c.oid) AS policies
       FROM pg_class c WHERE c.oid IN ('public.readings'::regclass, 'public.capture_sources'::regclass)
      ORDER BY 1`,
  );
  const policy =
    'query_organization:r:(organization_id = ( SELECT mcloud_private.query_organization() AS query_organization))';
  assert.deepEqual(tables.rows, [
    { relname: 'capture_sources', relrowsecurity: true, policies: [policy] },
    { relname: 'readings', relrowsecurity: true, policies: [policy] },
  ]);
  // The reader may read those two tables and its own views, nothing else.
  const grants = await db.query(
    `SELECT table_schema, table_name, privilege_type FROM information_schema.role_table_grants
      WHERE grantee = 'mcloud_query_reader' ORDER BY 1, 2, 3`,
  );
  assert.deepEqual(
    grants.rows.map((row) => `${row.table_schema}.${row.table_name}:${row.privilege_type}`),
    [
      'public.capture_sources:SELECT',
      'public.readings:SELECT',
      'sensordata.pipeline_readings:SELECT',
      'sensordata.readings:SELECT',
    ],
  );
});

test('the ownership check guards a real failure: a view owned by the tables owner shows every organization', async () => {
  const client = await t.cloud.deps.db.connect();
  try {
    await client.query('BEGIN');
    await client.query('ALTER VIEW sensordata.readings OWNER TO CURRENT_USER');
    await client.query(
      `SELECT set_config('mcloud.query_token', mcloud_private.organization_token('${orgA}'), true)`,
    );
    await client.query('SET LOCAL ROLE mcloud_query');
    assert.equal(await countOf(client, 'SELECT count(*)::int AS n FROM sensordata.readings'), 3);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  await asQueryRole(async (client) => {
    assert.equal(await countOf(client, 'SELECT count(*)::int AS n FROM sensordata.readings'), 1);
  });
});

test('the query role sees its organization through both views and cannot reach the tables', async () => {
  await asQueryRole(async (client) => {
    for (const view of scopedViews) {
      const seen = await client.query(`SELECT DISTINCT organization_id FROM sensordata.${view}`);
      assert.deepEqual(seen.rows, [{ organization_id: orgA }], view);
    }
    await client.query('SAVEPOINT s');
    // (SET ROLE mcloud_query_reader is not refused here: the test session's own user is a superuser. A
    // database user's is not: database-user.test.ts.)
    for (const sql of ['SELECT * FROM public.readings', 'SELECT * FROM public.capture_sources']) {
      await assert.rejects(client.query(sql), /permission denied/, sql);
      await client.query('ROLLBACK TO SAVEPOINT s');
    }
  });
});

test('row_security = off makes the query fail instead of showing other organizations', async () => {
  await asQueryRole(async (client) => {
    await client.query('SET LOCAL row_security = off');
    await assert.rejects(
      client.query('SELECT count(*) FROM sensordata.readings'),
      /query would be affected by row-level security policy for table "(readings|capture_sources)"/,
    );
  });
});

test('without a token (or with a forged one) the views are empty', async () => {
  const client = await t.cloud.deps.db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL ROLE mcloud_query');
    assert.equal(await countOf(client, 'SELECT count(*)::int AS n FROM sensordata.readings'), 0);
    await client.query(`SET LOCAL mcloud.query_token = '${orgB}.${'0'.repeat(64)}'`);
    assert.equal(await countOf(client, 'SELECT count(*)::int AS n FROM sensordata.pipeline_readings'), 0);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
});

test('the plan is flat: no Subquery Scan, the organization condition reaches the scans of both tables', async () => {
  await asQueryRole(async (client) => {
    const plan = await planOf(
      client,
      "EXPLAIN (COSTS OFF) SELECT time_received FROM readings WHERE component_name = 'own' ORDER BY time_received DESC LIMIT 100",
    );
    assert.doesNotMatch(plan, /Subquery Scan/, plan);
    assert.match(plan, /on capture_sources s\n.*\(organization_id = \(InitPlan \d\)\.col1\)/, plan);
    assert.match(plan, /on readings_\w+ r\n.*\(organization_id = \(InitPlan \d\)\.col1\)/, plan);
  });
});

test('in a parallel plan the organization is computed once, by the leader, not in every worker', async () => {
  await asQueryRole(async (client) => {
    // Parallel even for these few rows.
    await client.query(
      'SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0; SET LOCAL min_parallel_table_scan_size = 0; SET LOCAL debug_parallel_query = off',
    );
    const plan = await planOf(
      client,
      'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM readings',
    );
    const gatherAt = plan.search(/Gather/);
    assert.ok(gatherAt > 0, plan);
    // Every InitPlan (the policies' query_organization()) sits above the Gather and ran once.
    const initPlans = [...plan.matchAll(/InitPlan \d\n\s*->\s+Result \(actual rows=1(?:\.00)? loops=1\)/g)];
    assert.equal(initPlans.length, 2, plan);
    for (const initPlan of initPlans) assert.ok((initPlan.index ?? Infinity) < gatherAt, plan);
    const seen = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM readings');
    assert.equal(seen.rows[0]?.n, 1);
  });
});

test('a condition that is not leakproof is evaluated only after the policy (never as an index condition)', async () => {
  await asQueryRole(async (client) => {
    // Not leakproof (the cast's error would carry the value): never an index condition, and evaluated only
    // on rows the organization condition admitted — in the Filter after it, or below an index (or
    // recheck) condition on the organization.
    const leaky = await planOf(
      client,
      "EXPLAIN (COSTS OFF) SELECT _id FROM readings WHERE CAST(data->>'secret' AS integer) = 1",
    );
    const literal = (text: string) => text.replace(/[()\\[\]{}.*+?^$|]/g, '\\$&');
    const cast = literal("(((data ->> 'secret'::text))::integer = 1)");
    const organization = String.raw`\(organization_id = \(InitPlan \d\)\.col1\)`;
    assert.doesNotMatch(leaky, /Index Cond: .*::integer/, leaky);
    const afterInFilter = new RegExp(`Filter: \\(${organization} AND ${cast}\\)`);
    const belowIndexCondition = new RegExp(`Cond: ${organization}\\n\\s*Filter: ${cast}`);
    assert.ok(afterInFilter.test(leaky) || belowIndexCondition.test(leaky), leaky);
  });
});
