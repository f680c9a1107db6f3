-- The organization scope of `sensordata.readings` and `sensordata.pipeline_readings` moves from a
-- security-barrier view (0006, 0016) to row-level security on the tables they read. Same isolation, enforced
-- by the database; the difference is the plan. A security-barrier view stays a subquery the planner may not
-- flatten: every row of the organization passes a Subquery Scan node (TabularDataBySQL "latest 100 of one
-- sensor": 83k rows per parallel worker), and `query_organization()` (PL/pgSQL) ran in the leader and again
-- in every parallel worker. With row-level security the view is an ordinary view, flattened into the
-- user's statement: the plan is the one of the same statement over the tables (bench/README.md, findings
-- on TabularDataBySQL overhead), and the organization is computed once by the leader (an InitPlan whose
-- value the workers receive).
--
-- How isolation is kept:
--   * The views belong to `mcloud_query_reader`, a NOLOGIN role that is neither superuser nor BYPASSRLS and
--     owns no table, and that may SELECT `public.readings` and `public.capture_sources` (nothing else).
--     A view reads its tables with its owner's privileges and under its owner's row-level security, so
--     the policies below apply to every query through these views, whoever runs it (`mcloud_query`, a BI
--     database user, the cloud itself). Owners of a table (the cloud) and superusers skip row-level
--     security, which is why the owner of the views must be this role: a view recreated by the cloud would
--     show every organization (the security suite checks the owner, the role and the policies).
--   * The policies admit a row only if its organization is `mcloud_private.query_organization()` (the
--     signed token or the database user, 0006). No token → no rows.
--   * PostgreSQL evaluates the policy before any condition of the user's statement that is not leakproof
--     (a cast or a division that could put a value of another organization into an error message); only
--     leakproof built-ins (comparison operators) may run first, e.g. as index conditions.
--   * `SET row_security = off` does not switch the policies off for a role they apply to: the query fails.
--   * `mcloud_query` still has no privilege on any table: `public.readings` stays "permission denied".
-- The views still join sources on their id only: both tables are filtered to the organization, so the
-- organization equality of the old join is implied, and without it the planner does not add a gating
-- Result node comparing the two policies' InitPlans.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcloud_query_reader') THEN
    BEGIN
      CREATE ROLE mcloud_query_reader NOLOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- another database of the same cluster created it concurrently (roles are cluster-wide)
    END;
  END IF;
  -- A non-superuser owner must be a member to give it the views (a superuser may anyway).
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    EXECUTE format('GRANT mcloud_query_reader TO %I', current_user);
  END IF;
END
$$;

GRANT SELECT ON public.readings, public.capture_sources TO mcloud_query_reader;
GRANT EXECUTE ON FUNCTION mcloud_private.query_organization() TO mcloud_query_reader;

ALTER TABLE public.readings ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.capture_sources ENABLE ROW LEVEL SECURITY;
CREATE POLICY query_organization ON public.readings FOR SELECT TO mcloud_query_reader
  USING (organization_id = (SELECT mcloud_private.query_organization()));
CREATE POLICY query_organization ON public.capture_sources FOR SELECT TO mcloud_query_reader
  USING (organization_id = (SELECT mcloud_private.query_organization()));

ALTER VIEW sensordata.readings RESET (security_barrier);
CREATE OR REPLACE VIEW sensordata.readings AS
SELECT
  lpad(to_hex(floor(extract(epoch FROM r.captured_at))::bigint), 8, '0') || lpad(to_hex(r.id), 16, '0') AS _id,
  r.organization_id::text AS organization_id,
  s.location_id,
  s.robot_id::text AS robot_id,
  s.part_id::text AS part_id,
  s.component_type,
  s.component_name,
  s.method_name,
  r.time_requested,
  r.time_received,
  s.tags,
  s.method_parameters AS additional_parameters,
  r.data
FROM public.readings r
JOIN public.capture_sources s ON s.id = r.source_id;

ALTER VIEW sensordata.pipeline_readings RESET (security_barrier);
CREATE OR REPLACE VIEW sensordata.pipeline_readings AS
SELECT
  lpad(to_hex(floor(extract(epoch FROM r.captured_at))::bigint), 8, '0') || lpad(to_hex(r.id), 16, '0') AS _id,
  r.organization_id::text AS organization_id,
  s.location_id,
  s.robot_id::text AS robot_id,
  s.part_id::text AS part_id,
  s.component_type,
  s.component_name,
  s.method_name,
  r.time_requested,
  r.time_received,
  s.tags,
  s.method_parameters AS additional_parameters,
  r.data,
  r.captured_at
FROM public.readings r
JOIN public.capture_sources s ON s.id = r.source_id;

-- The new owner needs CREATE on the schema to receive a view (unless a superuser runs this); it keeps the
-- views, not the right to create more.
GRANT CREATE ON SCHEMA sensordata TO mcloud_query_reader;
ALTER VIEW sensordata.readings OWNER TO mcloud_query_reader;
ALTER VIEW sensordata.pipeline_readings OWNER TO mcloud_query_reader;
REVOKE CREATE ON SCHEMA sensordata FROM mcloud_query_reader;
-- An owner holds every privilege on its views; this one only reads them (they are not updatable anyway).
REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER
  ON sensordata.readings, sensordata.pipeline_readings FROM mcloud_query_reader;
