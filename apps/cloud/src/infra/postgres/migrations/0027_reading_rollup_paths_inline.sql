-- Reading rollups (0023): the path statistics move into the bucket row, as one jsonb object
-- {"<path as a JSON array>": [numbers, sum, min, max, arrays, others], …} (NULL: the bucket keeps no path
-- statistics, see 0023's paths_complete). A query then reads one row per bucket: no join per accumulated
-- path, which through the security-barrier views was a scan of every path row of the organization per path
-- (a third of the full-scan query, most of a one-week query). Indexes on the two hours serve time bounds.
-- Every existing bucket is marked dirty, so the materializer recomputes it in the new form.

DROP VIEW sensordata.reading_rollup_paths;
DROP TABLE reading_rollup_paths;
DROP VIEW sensordata.reading_rollup_buckets;

ALTER TABLE reading_rollup_buckets DROP COLUMN paths_complete;
ALTER TABLE reading_rollup_buckets ADD COLUMN paths jsonb;
CREATE INDEX reading_rollup_buckets_received ON reading_rollup_buckets (organization_id, received_hour);
CREATE INDEX reading_rollup_buckets_requested ON reading_rollup_buckets (organization_id, requested_hour);

INSERT INTO reading_rollup_marks (organization_id, source_id, captured_hour, received_hour, requested_hour)
SELECT organization_id, source_id, captured_hour, received_hour, requested_hour FROM reading_rollup_buckets;

CREATE VIEW sensordata.reading_rollup_buckets WITH (security_barrier) AS
SELECT b.source_id, b.captured_hour, b.received_hour, b.requested_hour, b.row_count, b.paths
FROM public.reading_rollup_buckets b
WHERE b.organization_id = (SELECT mcloud_private.query_organization());
REVOKE ALL ON sensordata.reading_rollup_buckets FROM PUBLIC;
GRANT SELECT ON sensordata.reading_rollup_buckets TO mcloud_query;

-- TRUNCATE readings empties the rollups (0023), now without the path table.
CREATE OR REPLACE FUNCTION mcloud_private.clear_reading_rollups() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_catalog, pg_temp
AS $$
BEGIN
  DELETE FROM reading_rollup_buckets;
  DELETE FROM reading_rollup_marks;
  RETURN NULL;
END
$$;
