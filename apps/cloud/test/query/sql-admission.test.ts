import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deserialize } from 'bson';
import type { Principal } from '../../src/domain/auth/principal.ts';
import { defaultQueryLimits } from '../../src/domain/data/query-access/organization-query.ts';
import { tabularDataBySql } from '../../src/domain/data/sql/tabular-data-by-sql.ts';
import { prepareUserSql } from '../../src/domain/data/sql/user-sql.ts';
import { isDomainError } from '../../src/domain/errors.ts';
import { ownerOf } from '../support/owner-principal.ts';
import { createPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// TabularDataBySQL admission (issue 3 item 1 and "Bad input"): each refusal is InvalidArgument naming what
// was refused — before the database sees the statement — and the reference service's dotted-path style
// with CAST('…' AS TIMESTAMP) runs without a time lower bound, over `readings` or `sensorData.readings`.

async function refusal(sql: string): Promise<string> {
  try {
    await prepareUserSql(sql, 'sql_query');
  } catch (error) {
    assert.ok(isDomainError(error), `${sql}: ${String(error)}`);
    assert.equal(error.code, 'InvalidArgument', sql);
    return error.message;
  }
  assert.fail(`${sql}: admitted`);
}

test('refusals name what was refused: statements, SELECT INTO, locking, functions, relations', async () => {
  const cases: [string, RegExp][] = [
    ['DELETE FROM readings', /^sql_query: only SELECT statements are allowed \(got DELETE\)$/],
    ["UPDATE readings SET data = '{}'", /only SELECT statements are allowed \(got UPDATE\)/],
    ['INSERT INTO readings DEFAULT VALUES', /only SELECT statements are allowed \(got INSERT\)/],
    ['CREATE TABLE stolen (x int)', /only SELECT statements are allowed \(got CREATE TABLE\)/],
    ['DROP VIEW readings', /only SELECT statements are allowed \(got DROP\)/],
    ['TRUNCATE readings', /only SELECT statements are allowed \(got TRUNCATE\)/],
    ['SET ROLE postgres', /only SELECT statements are allowed \(got SET\)/],
    ['SELECT * INTO stolen FROM readings', /^sql_query: SELECT INTO is not allowed$/],
    ['SELECT * FROM readings FOR UPDATE', /locking clauses \(FOR UPDATE\/SHARE\) are not allowed/],
    ['SELECT * FROM readings FOR SHARE NOWAIT', /locking clauses \(FOR UPDATE\/SHARE\) are not allowed/],
    [
      'WITH d AS (DELETE FROM readings RETURNING *) SELECT * FROM d',
      /WITH d: only SELECT is allowed \(got DELETE\)/,
    ],
    [
      'SELECT 1; SELECT 2',
      /must contain exactly one statement \(got 2\); multiple statements are not allowed/,
    ],
    ["SELECT pg_read_file('/etc/passwd')", /^sql_query: function pg_read_file is not allowed$/],
    ["SELECT pg_catalog.pg_read_file('/etc/passwd')", /function pg_catalog\.pg_read_file is not allowed/],
    ['SELECT pg_sleep(1)', /function pg_sleep is not allowed/],
    ["SELECT * FROM dblink('dbname=x', 'SELECT 1') AS t(x int)", /function dblink is not allowed/],
    ["SELECT current_setting('mcloud.query_token')", /function current_setting is not allowed/],
    ["SELECT set_config('role', 'postgres', false)", /function set_config is not allowed/],
    ["SELECT lo_import('/etc/passwd')", /function lo_import is not allowed/],
    [
      'SELECT * FROM public.readings',
      /relation "public\.readings" is not available; query the table readings/,
    ],
    ['SELECT * FROM capture_sources', /relation "capture_sources" is not available/],
    ['SELECT * FROM sensordata.reading_rollup_buckets', /relation "sensordata\.reading_rollup_buckets"/],
    ['SELECT relname FROM pg_class', /relation "pg_class" is not available/],
    ["SELECT 'x'::regclass", /type regclass is not allowed/],
    ['SELECT 1 OPERATOR(public.+) 1', /operator public\.\+ is not allowed/],
    ['', /^sql_query: is required$/],
  ];
  for (const [sql, expected] of cases) {
    assert.match(await refusal(sql), expected, sql);
  }
  const tooLong = `SELECT 1 ${' '.repeat(100_000)}`;
  assert.match(await refusal(tooLong), /must be at most 100000 characters \(got 100009\)/);
});

test('a syntax error is InvalidArgument with PostgreSQL message and the position in the user text', async () => {
  assert.match(
    await refusal('SELECT data.readings.x FROM readings WHERE'),
    /^sql_query: syntax error at end of input \(at character \d+\)$/,
  );
  assert.match(
    await refusal('SELECT * FROM FROM readings'),
    /syntax error at or near "FROM" \(at character 15\)/,
  );
});

let t: TestCloud;
let principal: Principal;
let organizationId: string;
const base = Date.parse('2025-03-10T00:00:00Z');

before(async () => {
  t = await startTestCloud();
  organizationId = t.bootstrap.organization_id;
  principal = ownerOf(organizationId);
  const part = await createPart(
    t.cloud,
    { organizationId, locationId: t.bootstrap.location_id },
    { robotName: 'rover' },
  );
  await seedReadings(t.cloud, part, { componentName: 'x' }, [
    { capturedAtMs: Date.parse('2019-01-01T00:00:00Z'), data: { readings: { temperature: 5 } } },
    { capturedAtMs: base, data: { readings: { temperature: 20 } } },
    { capturedAtMs: base + 60_000, data: { readings: { temperature: 22 } } },
  ]);
  await seedReadings(t.cloud, part, { componentName: 'y' }, [
    { capturedAtMs: base, data: { readings: { temperature: 99 } } },
  ]);
});

after(async () => {
  await t?.stop();
});

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const documents = await tabularDataBySql(
    { db: t.cloud.deps.db, clock: t.cloud.deps.clock, queryLimits: defaultQueryLimits },
    principal,
    { organizationId, sqlQuery: sql },
    AbortSignal.timeout(10_000),
  );
  return documents.map((bytes) => deserialize(bytes));
}

test('dotted paths and CAST(… AS TIMESTAMP) with no time lower bound, over both table spellings', async () => {
  // The issue's own example: no time condition at all, every reading of the component since 2019.
  assert.deepEqual(
    await query(
      "SELECT data.readings.temperature AS t FROM readings WHERE component_name = 'x' ORDER BY time_received",
    ),
    [{ t: 5 }, { t: 20 }, { t: 22 }],
  );
  // Only an upper bound.
  assert.deepEqual(
    await query(
      `SELECT data.readings.temperature AS t FROM sensorData.readings
        WHERE component_name = 'x' AND time_received < CAST('2025-03-10T00:00:30Z' AS TIMESTAMP)
        ORDER BY time_received`,
    ),
    [{ t: 5 }, { t: 20 }],
  );
  // Both spellings of the schema, qualified columns and aliases with dotted paths.
  for (const table of [
    'sensorData.readings',
    'sensordata.readings',
    'SENSORDATA.READINGS',
    'readings',
    '"sensorData"."readings"',
    '`sensorData`.`readings`',
  ]) {
    assert.deepEqual(
      await query(
        `SELECT r.component_name, max(r.data.readings.temperature) AS top FROM ${table} r GROUP BY 1 ORDER BY 1`,
      ),
      [
        { component_name: 'x', top: 22 },
        { component_name: 'y', top: 99 },
      ],
      table,
    );
  }
});
