/**
 * Attempts to escape the organization scope, write, sleep or read files through user SQL. The security
 * suite runs each one (1) through TabularDataBySQL and (2) straight through the database-enforced query
 * path (no parser check), and requires that it fails or returns nothing of the other organization.
 * Add every new idea here. `{B}` is replaced by the other organization's ID.
 */
export const sqlAttacks: readonly { name: string; sql: string }[] = [
  // Other relations, directly and hidden in joins, subqueries, CTEs, lateral and set operations.
  { name: 'base table', sql: 'SELECT * FROM public.readings' },
  { name: 'base table, quoted', sql: 'SELECT * FROM "public"."readings"' },
  { name: 'base table via unicode escape', sql: 'SELECT * FROM U&"\\0070ublic".readings' },
  { name: 'base table via backticks', sql: 'SELECT * FROM `public`.`readings`' },
  { name: 'TABLE statement', sql: 'TABLE public.readings' },
  { name: 'capture sources', sql: 'SELECT * FROM capture_sources' },
  { name: 'join', sql: 'SELECT r.* FROM readings r JOIN public.readings p ON true' },
  { name: 'join with sources', sql: 'SELECT s.* FROM readings r, public.capture_sources s' },
  { name: 'scalar subquery', sql: 'SELECT (SELECT count(*) FROM public.readings) AS n' },
  {
    name: 'EXISTS subquery',
    sql: "SELECT 1 WHERE EXISTS (SELECT 1 FROM public.readings WHERE organization_id = '{B}')",
  },
  { name: 'CTE', sql: 'WITH x AS (SELECT * FROM public.readings) SELECT * FROM x' },
  {
    name: 'recursive CTE',
    sql: 'WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x) SELECT * FROM x, public.readings',
  },
  { name: 'lateral', sql: 'SELECT * FROM readings, LATERAL (SELECT * FROM public.capture_sources) s' },
  { name: 'union', sql: 'SELECT data FROM readings UNION ALL SELECT data FROM public.readings' },
  { name: 'view filtered by foreign id', sql: "SELECT * FROM readings WHERE organization_id = '{B}'" },
  { name: 'view filtered by not-own id', sql: "SELECT * FROM readings WHERE organization_id <> 'x' OR true" },
  { name: 'private token function', sql: "SELECT mcloud_private.organization_token('{B}')" },
  { name: 'private secret table', sql: 'SELECT * FROM mcloud_private.query_secret' },
  { name: 'private user table', sql: 'SELECT * FROM mcloud_private.database_users' },
  {
    name: 'cast error leaking foreign values',
    sql: "SELECT * FROM readings WHERE CAST(data->>'secret' AS integer) = 1",
  },
  // Row-level security (migration 0024) runs the policy before any condition that is not leakproof; these
  // would put the other organization's values into an error message if it did not, on either table.
  {
    name: 'cast error on a source column (tags)',
    sql: 'SELECT * FROM readings WHERE CAST(tags[1] AS integer) = 1',
  },
  {
    name: 'cast error on a source column (component_name)',
    sql: 'SELECT * FROM readings WHERE CAST(component_name AS integer) = 1',
  },
  {
    name: 'cast error after an index-usable condition',
    sql: "SELECT * FROM readings WHERE time_received >= '2000-01-01' AND CAST(data->>'secret' AS integer) = 1",
  },
  {
    name: 'cast error in a join condition',
    sql: "SELECT 1 FROM readings a JOIN readings b ON CAST(b.data->>'secret' AS integer) = 1",
  },
  {
    name: 'cast error in an OR with a leakproof condition',
    sql: "SELECT * FROM readings WHERE component_name = 'secret-b' OR CAST(data->>'secret' AS integer) = 1",
  },
  { name: 'reader role', sql: 'SET ROLE mcloud_query_reader' },
  { name: 'row_security off', sql: 'SET row_security = off' },
  {
    name: 'division error leaking foreign values',
    sql: "SELECT * FROM readings WHERE 1 / (length(data->>'secret') - 11) = 1",
  },
  // The reading rollups (migrations 0023, 0026), the hot store and pipeline sinks: their tables, and their
  // views asked for rows whose source is not the caller's (the suite materializes the rollups first).
  { name: 'rollup buckets table', sql: 'SELECT * FROM public.reading_rollup_buckets' },
  { name: 'rollup marks table', sql: 'SELECT * FROM public.reading_rollup_marks' },
  { name: 'hot store table', sql: 'SELECT data FROM public.hot_readings' },
  { name: 'pipeline sink table', sql: 'SELECT doc FROM public.pipeline_sink' },
  { name: 'pipeline runs table', sql: 'SELECT * FROM public.data_pipeline_runs' },
  { name: 'a readings partition', sql: 'SELECT data FROM public.readings_y2025m03' },
  { name: 'rollup sources view', sql: 'SELECT * FROM sensordata.reading_sources' },
  { name: 'rollup bucket rows view', sql: 'SELECT data FROM sensordata.reading_bucket_rows' },
  ...['reading_rollup_buckets', 'reading_rollup_marks'].map((view) => ({
    name: `${view} view: foreign sources`,
    sql: `SELECT 'victim' AS leaked FROM sensordata.${view} WHERE source_id NOT IN (SELECT source_id FROM sensordata.reading_sources)`,
  })),
  {
    // Path statistics are a jsonb column of the buckets since migration 0027; only B's documents have `secret`.
    name: 'rollup bucket paths: foreign keys',
    sql: "SELECT 'victim' AS leaked FROM sensordata.reading_rollup_buckets WHERE paths::text LIKE '%secret%'",
  },
  // Settings and roles.
  { name: 'current_setting of the token', sql: "SELECT current_setting('mcloud.query_token') AS t" },
  {
    name: 'set_config forged token',
    sql: "SELECT set_config('mcloud.query_token', '{B}.0000000000000000000000000000000000000000000000000000000000000000', true)",
  },
  { name: 'set_config role', sql: "SELECT set_config('role', 'postgres', true)" },
  {
    name: 'set_config session authorization',
    sql: "SELECT set_config('session_authorization', 'postgres', true)",
  },
  { name: 'SET ROLE', sql: 'SET ROLE postgres' },
  { name: 'RESET ROLE', sql: 'RESET ROLE' },
  { name: 'SET token', sql: "SET mcloud.query_token = '{B}.x'" },
  { name: 'SET SESSION AUTHORIZATION', sql: 'SET SESSION AUTHORIZATION DEFAULT' },
  // System catalogs and statistics.
  { name: 'pg_class', sql: 'SELECT relname FROM pg_class' },
  { name: 'pg_catalog.pg_class', sql: 'SELECT relname FROM pg_catalog.pg_class' },
  {
    name: 'pg_stats of readings',
    sql: "SELECT most_common_vals::text FROM pg_stats WHERE tablename IN ('readings', 'capture_sources')",
  },
  { name: 'pg_stat_activity', sql: 'SELECT query FROM pg_stat_activity' },
  { name: 'pg_authid', sql: 'SELECT * FROM pg_authid' },
  { name: 'information_schema', sql: 'SELECT * FROM information_schema.tables' },
  { name: 'regclass cast', sql: "SELECT 'public.readings'::regclass" },
  { name: 'query_to_xml', sql: "SELECT query_to_xml('SELECT * FROM public.readings', true, true, '')" },
  // Comments and multiple statements.
  { name: 'statement after a block comment', sql: 'SELECT 1 /* harmless */; DELETE FROM readings' },
  { name: 'statement after a line comment', sql: 'SELECT 1 -- harmless\n; SELECT * FROM public.readings' },
  { name: 'two selects', sql: 'SELECT 1; SELECT * FROM public.readings' },
  { name: 'comment hiding a table', sql: 'SELECT * FROM /* readings */ public.readings' },
  {
    name: 'dollar-quoted statement',
    sql: "SELECT 1 FROM readings WHERE $$'; DELETE FROM readings; --$$ = ''",
  },
  { name: 'closing the server wrapper parenthesis', sql: 'SELECT 1) AS x, public.readings r --' },
  {
    name: 'closing the wrapper, second statement',
    sql: 'SELECT 1) AS x; DELETE FROM public.readings; SELECT * FROM (SELECT 1',
  },
  { name: 'transaction control', sql: 'COMMIT; SELECT * FROM public.readings' },
  // Writes.
  { name: 'DELETE', sql: 'DELETE FROM readings' },
  { name: 'UPDATE', sql: "UPDATE readings SET data = '{}'" },
  { name: 'INSERT', sql: "INSERT INTO public.readings (organization_id) VALUES ('{B}')" },
  { name: 'TRUNCATE', sql: 'TRUNCATE public.readings' },
  { name: 'DROP', sql: 'DROP VIEW sensordata.readings' },
  { name: 'CREATE TABLE AS', sql: 'CREATE TABLE stolen AS SELECT * FROM readings' },
  { name: 'SELECT INTO', sql: 'SELECT * INTO stolen FROM readings' },
  { name: 'data-modifying CTE', sql: 'WITH d AS (DELETE FROM public.readings RETURNING *) SELECT * FROM d' },
  { name: 'FOR UPDATE', sql: 'SELECT * FROM readings FOR UPDATE' },
  { name: 'nextval', sql: "SELECT nextval('public.readings_id_seq')" },
  { name: 'COPY to a file', sql: "COPY (SELECT * FROM readings) TO '/tmp/stolen.csv'" },
  { name: 'DO block', sql: 'DO $$ BEGIN PERFORM 1; END $$' },
  { name: 'GRANT', sql: 'GRANT SELECT ON public.readings TO mcloud_query' },
  // Sleeping and exhausting.
  { name: 'pg_sleep', sql: 'SELECT pg_sleep(30)' },
  { name: 'pg_sleep qualified', sql: 'SELECT pg_catalog.pg_sleep(30)' },
  { name: 'pg_sleep quoted', sql: 'SELECT "pg_sleep"(30)' },
  { name: 'pg_sleep_for', sql: "SELECT pg_sleep_for('30 seconds')" },
  {
    name: 'endless recursion',
    sql: 'WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x) SELECT count(*) FROM x',
  },
  {
    name: 'huge cross join',
    sql: 'SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b',
  },
  { name: 'advisory lock', sql: 'SELECT pg_advisory_lock(1)' },
  // Files, programs, other servers.
  { name: 'pg_read_file', sql: "SELECT pg_read_file('/etc/passwd')" },
  { name: 'pg_read_binary_file', sql: "SELECT pg_read_binary_file('postgresql.conf')" },
  { name: 'pg_ls_dir', sql: "SELECT pg_ls_dir('.')" },
  { name: 'pg_stat_file', sql: "SELECT pg_stat_file('postgresql.conf')" },
  { name: 'lo_import', sql: "SELECT lo_import('/etc/passwd')" },
  { name: 'COPY FROM PROGRAM', sql: "COPY readings FROM PROGRAM 'id'" },
  { name: 'dblink', sql: "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(x int)" },
  { name: 'function in FROM', sql: "SELECT * FROM ROWS FROM (pg_read_file('/etc/passwd')) AS f" },
  { name: 'terminate backends', sql: 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity' },
  { name: 'user-defined operator schema', sql: 'SELECT 1 OPERATOR(public.+) 1' },
];
