-- User queries (TabularDataBySQL, TabularDataByMQL, BI tools through a database user) read documents of
-- ONE organization, and the database — not string checks — enforces which one.
--
-- The relation users query is the view `sensordata.readings`: one row per capture event with the document
-- fields of wire-protocol §3.2 (`_id` is a 24-hex ObjectId text: capture second + reading id). The schema is
-- lower case so that `readings`, `sensordata.readings` and unquoted `sensorData.readings` all resolve to it.
--
-- Which organization a session sees is decided by `mcloud_private.query_organization()`:
--   1. a database user created by ConfigureDatabaseUser (a LOGIN role listed in
--      `mcloud_private.database_users`) sees exactly its organization — `session_user` cannot be changed by a
--      non-superuser;
--   2. otherwise the server-signed token in the setting `mcloud.query_token` decides. Anybody can SET that
--      setting, so it is not trusted as such: it must be `<organization uuid>.<sha256(secret || uuid) hex>`
--      with a secret that only the owner of `mcloud_private` can read. A user who sets it can at most
--      present a token the server gave them (their own organization); tokens for other organizations
--      cannot be forged. No token or a bad one → no rows at all.
-- The server runs a user query as the NOLOGIN role `mcloud_query` (SET LOCAL ROLE inside a READ ONLY
-- transaction, after `set_config('mcloud.query_token', mcloud_private.organization_token(org), true)`).
-- That role may only use schema `sensordata` (the view and the JSON helpers below); it has no privilege on
-- any table. The view is a security barrier, so a user's predicate (e.g. a cast that fails with the value in
-- its error message) is never evaluated on another organization's rows.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcloud_query') THEN
    BEGIN
      CREATE ROLE mcloud_query NOLOGIN NOINHERIT;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- another database of the same cluster created it concurrently (roles are cluster-wide)
    END;
  END IF;
  -- A non-superuser owner must be a member to SET ROLE to it (a superuser may anyway).
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    EXECUTE format('GRANT mcloud_query TO %I', current_user);
  END IF;
END
$$;

CREATE SCHEMA mcloud_private;
REVOKE ALL ON SCHEMA mcloud_private FROM PUBLIC;

-- 2 × 122 random bits (gen_random_uuid uses the strong random source).
CREATE TABLE mcloud_private.query_secret (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  secret bytea NOT NULL
);
INSERT INTO mcloud_private.query_secret (secret)
VALUES (sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || clock_timestamp()::text, 'UTF8')));
REVOKE ALL ON mcloud_private.query_secret FROM PUBLIC;

-- Database users (ConfigureDatabaseUser): one LOGIN role per organization.
CREATE TABLE mcloud_private.database_users (
  organization_id uuid PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  role_name text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
REVOKE ALL ON mcloud_private.database_users FROM PUBLIC;

-- The token the server sets for one query. Only the owner (the cloud) may call it.
CREATE FUNCTION mcloud_private.organization_token(organization uuid) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT organization::text || '.' ||
         encode(sha256((SELECT secret FROM mcloud_private.query_secret) || convert_to(organization::text, 'UTF8')), 'hex')
$$;
REVOKE ALL ON FUNCTION mcloud_private.organization_token(uuid) FROM PUBLIC;

CREATE FUNCTION mcloud_private.query_organization() RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  mapped uuid;
  token text;
  claimed text;
BEGIN
  SELECT u.organization_id INTO mapped FROM mcloud_private.database_users u WHERE u.role_name = session_user;
  IF mapped IS NOT NULL THEN
    RETURN mapped;
  END IF;
  token := current_setting('mcloud.query_token', true);
  IF token IS NULL OR token !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[0-9a-f]{64}$' THEN
    RETURN NULL;
  END IF;
  claimed := substr(token, 1, 36);
  -- Compare digests of both sides: the comparison time tells nothing about the expected token.
  IF sha256(convert_to(mcloud_private.organization_token(claimed::uuid), 'UTF8')) = sha256(convert_to(token, 'UTF8')) THEN
    RETURN claimed::uuid;
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION mcloud_private.query_organization() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mcloud_private.query_organization() TO mcloud_query;

CREATE SCHEMA sensordata;
REVOKE ALL ON SCHEMA sensordata FROM PUBLIC;
GRANT USAGE ON SCHEMA sensordata TO mcloud_query;

CREATE VIEW sensordata.readings WITH (security_barrier) AS
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
JOIN public.capture_sources s ON s.id = r.source_id AND s.organization_id = r.organization_id
WHERE r.organization_id = (SELECT mcloud_private.query_organization());
REVOKE ALL ON sensordata.readings FROM PUBLIC;
GRANT SELECT ON sensordata.readings TO mcloud_query;

-- Typed reads of JSON values for the dotted-path SQL style (`data.readings.temperature > 20`): NULL unless
-- the value has that JSON type, so a string never breaks an average. Inlinable, hence no cost per row.
CREATE FUNCTION sensordata.json_number(value jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN value::double precision END $$;

CREATE FUNCTION sensordata.json_text(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'string' THEN value #>> '{}' END $$;

CREATE FUNCTION sensordata.json_boolean(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'boolean' THEN value::boolean END $$;

GRANT EXECUTE ON FUNCTION sensordata.json_number(jsonb), sensordata.json_text(jsonb), sensordata.json_boolean(jsonb)
  TO mcloud_query;

-- Defense in depth: the server's session user may be a superuser, and `set_config('role', …)` inside a
-- query would switch back to it. Nobody but the owner may call set_config in this database (the SET
-- command is unaffected). A non-superuser owner cannot revoke it; PostgreSQL then only warns.
REVOKE EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) FROM PUBLIC;
