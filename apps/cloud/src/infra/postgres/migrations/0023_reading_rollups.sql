-- Reading rollups: per-hour pre-aggregates of the readings, so a `$match` (source fields, whole-hour bounds
-- on time_received / time_requested) + `$group` (source-level key; $sum/$avg/$min/$max/$count) MQL pipeline
-- reads a few thousand bucket rows instead of every reading's jsonb (the full scan read 1M documents).
--
-- A bucket is (organization, capture source, hour of captured_at, hour of time_received, hour of
-- time_requested), hours in UTC; a missing time is the hour 'infinity' (so bucket keys compare with `=` and
-- hash; every time bound also excludes 'infinity', as a missing time matches no date comparison).
-- captured_at is part of the key only to find a bucket's rows through `readings_source_time`.
--
-- Exactness by construction (see domain/data/rollups/reading-rollup-materializer.ts for the races):
-- * every statement that inserts, deletes or updates readings appends "dirty" marks for the buckets it
--   touched, IN ITS OWN TRANSACTION (statement-level triggers with transition tables: one INSERT … SELECT
--   DISTINCT per statement, nothing per row);
-- * the materializer recomputes marked buckets from the raw rows in one REPEATABLE READ transaction and
--   deletes exactly the marks it read;
-- * a query uses a bucket's rollup only when the bucket has no visible mark, and reads the raw rows of the
--   other buckets, in one statement (one snapshot). The result is exact at any moment, even with the
--   materializer stopped.
-- Not covered by the triggers: dropping or truncating a single partition (nothing does; a future retention
-- that drops partitions must mark or delete the buckets of the dropped hours). TRUNCATE of `readings` itself
-- empties the rollups.

CREATE TABLE reading_rollup_buckets (
  organization_id uuid NOT NULL,
  source_id bigint NOT NULL,
  captured_hour timestamptz NOT NULL,
  received_hour timestamptz NOT NULL,
  requested_hour timestamptz NOT NULL,
  row_count bigint NOT NULL,
  -- false: the bucket's documents have too many distinct paths (or `data` that is no object) — no path rows,
  -- so accumulators over a field path read the bucket's raw rows.
  paths_complete boolean NOT NULL,
  PRIMARY KEY (organization_id, source_id, captured_hour, received_hour, requested_hour)
);

-- One row per (bucket, path below `data` reached through objects only): every node, whatever its type.
-- A path absent from a complete bucket has no value (and no array on the way) in any of its documents.
CREATE TABLE reading_rollup_paths (
  organization_id uuid NOT NULL,
  source_id bigint NOT NULL,
  captured_hour timestamptz NOT NULL,
  received_hour timestamptz NOT NULL,
  requested_hour timestamptz NOT NULL,
  -- JSON array of the steps below `data`, e.g. ["readings","temperature"] (keys may contain dots).
  path text NOT NULL,
  -- Numbers at the path: how many, their exact sum, minimum and maximum (numeric, the type the compiled SQL
  -- gives $sum/$min/$max of numbers).
  number_count bigint NOT NULL,
  number_sum numeric,
  number_min numeric,
  number_max numeric,
  -- Arrays at the path: a path below it maps over the array (an array value for $min/$max).
  array_count bigint NOT NULL,
  -- Strings, booleans and objects at the path: $min/$max of the path must compare them in BSON order.
  other_count bigint NOT NULL,
  PRIMARY KEY (organization_id, source_id, captured_hour, received_hour, requested_hour, path)
);

-- Appended by the triggers, deleted (by id, exactly those it read) by the materializer. No uniqueness: an
-- ON CONFLICT DO NOTHING against a mark the materializer is about to delete would lose the new rows' mark.
CREATE TABLE reading_rollup_marks (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL,
  source_id bigint NOT NULL,
  captured_hour timestamptz NOT NULL,
  received_hour timestamptz NOT NULL,
  requested_hour timestamptz NOT NULL
);
CREATE INDEX reading_rollup_marks_bucket
  ON reading_rollup_marks (organization_id, source_id, captured_hour, received_hour, requested_hour);

CREATE FUNCTION mcloud_private.reading_rollup_hour(at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT COALESCE(date_trunc('hour', at, 'UTC'), 'infinity'::timestamptz) $$;

CREATE FUNCTION mcloud_private.mark_reading_rollups() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO reading_rollup_marks (organization_id, source_id, captured_hour, received_hour, requested_hour)
    SELECT DISTINCT n.organization_id, n.source_id, mcloud_private.reading_rollup_hour(n.captured_at),
           mcloud_private.reading_rollup_hour(n.time_received), mcloud_private.reading_rollup_hour(n.time_requested)
      FROM new_rows n;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    INSERT INTO reading_rollup_marks (organization_id, source_id, captured_hour, received_hour, requested_hour)
    SELECT DISTINCT o.organization_id, o.source_id, mcloud_private.reading_rollup_hour(o.captured_at),
           mcloud_private.reading_rollup_hour(o.time_received), mcloud_private.reading_rollup_hour(o.time_requested)
      FROM old_rows o;
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION mcloud_private.mark_reading_rollups() FROM PUBLIC;

CREATE TRIGGER readings_rollup_marks_insert AFTER INSERT ON readings
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mcloud_private.mark_reading_rollups();
CREATE TRIGGER readings_rollup_marks_delete AFTER DELETE ON readings
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION mcloud_private.mark_reading_rollups();
CREATE TRIGGER readings_rollup_marks_update AFTER UPDATE ON readings
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mcloud_private.mark_reading_rollups();

CREATE FUNCTION mcloud_private.clear_reading_rollups() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_catalog, pg_temp
AS $$
BEGIN
  DELETE FROM reading_rollup_paths;
  DELETE FROM reading_rollup_buckets;
  DELETE FROM reading_rollup_marks;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION mcloud_private.clear_reading_rollups() FROM PUBLIC;
CREATE TRIGGER readings_rollup_truncate AFTER TRUNCATE ON readings
  FOR EACH STATEMENT EXECUTE FUNCTION mcloud_private.clear_reading_rollups();

-- Readings stored before this migration: every bucket is dirty (the materializer will compute it).
INSERT INTO reading_rollup_marks (organization_id, source_id, captured_hour, received_hour, requested_hour)
SELECT DISTINCT organization_id, source_id, mcloud_private.reading_rollup_hour(captured_at),
       mcloud_private.reading_rollup_hour(time_received), mcloud_private.reading_rollup_hour(time_requested)
  FROM readings;

-- What the query role (mcloud_query, migration 0006) reads: the same organization check as
-- `sensordata.readings`, as security-barrier views, so a user query can never see another organization's
-- sources, rollups, marks or rows through them.
CREATE VIEW sensordata.reading_sources WITH (security_barrier) AS
SELECT
  s.id AS source_id,
  s.organization_id::text AS organization_id,
  s.location_id,
  s.robot_id::text AS robot_id,
  s.part_id::text AS part_id,
  s.component_type,
  s.component_name,
  s.method_name,
  s.tags,
  s.method_parameters AS additional_parameters
FROM public.capture_sources s
WHERE s.organization_id = (SELECT mcloud_private.query_organization());

CREATE VIEW sensordata.reading_rollup_buckets WITH (security_barrier) AS
SELECT b.source_id, b.captured_hour, b.received_hour, b.requested_hour, b.row_count, b.paths_complete
FROM public.reading_rollup_buckets b
WHERE b.organization_id = (SELECT mcloud_private.query_organization());

CREATE VIEW sensordata.reading_rollup_paths WITH (security_barrier) AS
SELECT p.source_id, p.captured_hour, p.received_hour, p.requested_hour, p.path, p.number_count, p.number_sum,
       p.number_min, p.number_max, p.array_count, p.other_count
FROM public.reading_rollup_paths p
WHERE p.organization_id = (SELECT mcloud_private.query_organization());

CREATE VIEW sensordata.reading_rollup_marks WITH (security_barrier) AS
SELECT m.source_id, m.captured_hour, m.received_hour, m.requested_hour
FROM public.reading_rollup_marks m
WHERE m.organization_id = (SELECT mcloud_private.query_organization());

-- The raw rows of one bucket (the compiled query reads them per dirty bucket through readings_source_time).
CREATE VIEW sensordata.reading_bucket_rows WITH (security_barrier) AS
SELECT r.source_id, r.captured_at, r.time_requested, r.time_received, r.data
FROM public.readings r
WHERE r.organization_id = (SELECT mcloud_private.query_organization());

REVOKE ALL ON sensordata.reading_sources, sensordata.reading_rollup_buckets, sensordata.reading_rollup_paths,
  sensordata.reading_rollup_marks, sensordata.reading_bucket_rows FROM PUBLIC;
GRANT SELECT ON sensordata.reading_sources, sensordata.reading_rollup_buckets, sensordata.reading_rollup_paths,
  sensordata.reading_rollup_marks, sensordata.reading_bucket_rows TO mcloud_query;
