-- Custom index keys that MQL `$match` can use, and writes that a customer's unique index cannot break.
--
-- 1. `sensordata.doc_index_key(doc, path)`: the key of a custom index on one document path (index-sql.ts).
--    NULL when the path is missing; '[' when an array is met on the way or at the end (MongoDB's array
--    traversal cannot be an index key, so all such documents share one key and are re-checked); '{' for a
--    document; a number as its value with trailing zeros trimmed (20, 20.0 and 2e1 give '20'); strings,
--    booleans and null as JSON text. At most 100 characters (a btree entry has a size limit; a longer value
--    is cut, which still makes `key = left(canonical value, 100)` a necessary condition).
--    For `{path: v}` with a scalar v, MongoDB's match implies `key IN (canonical(v), '[')`, so the MQL
--    compiler adds that condition on indexed paths (domain/data/indexes/index-match.ts) and the planner can
--    use the organization's partial index. It never raises for any input and only returns a function of
--    its arguments, so it is marked LEAKPROOF (superuser only, like doc_key in 0011): conditions on it pass
--    the security barrier of the query views.
-- 2. The hot-store copy skips a row that a customer's unique index refuses (ON CONFLICT DO NOTHING, any
--    unique index as arbiter): the reading itself is stored; only its hot copy is left out. Without this a
--    duplicate would fail the whole upload.
-- 3. `custom_indexes.pipeline_name` holds the pipeline's id for pipeline-sink indexes (a pipeline can be
--    renamed; its indexes stay with it). Only the API speaks names.

CREATE FUNCTION sensordata.doc_index_key(doc jsonb, path text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog
AS $$
DECLARE
  value jsonb := doc;
  step text;
BEGIN
  FOREACH step IN ARRAY path LOOP
    IF jsonb_typeof(value) = 'array' THEN
      RETURN '[';
    END IF;
    value := value -> step;
    IF value IS NULL THEN
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN CASE jsonb_typeof(value)
    WHEN 'array' THEN '['
    WHEN 'object' THEN '{'
    WHEN 'number' THEN left(trim_scale(value::numeric)::text, 100)
    ELSE left(value::text, 100)
  END;
END
$$;
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION sensordata.doc_index_key(jsonb, text[]) LEAKPROOF;
  END IF;
END
$$;
GRANT EXECUTE ON FUNCTION sensordata.doc_index_key(jsonb, text[]) TO mcloud_query;

CREATE OR REPLACE FUNCTION mcloud_private.copy_hot_readings() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  INSERT INTO public.hot_readings (id, organization_id, source_id, captured_at, time_requested, time_received, expires_at, data)
  SELECT n.id, n.organization_id, n.source_id, n.captured_at, n.time_requested, n.time_received,
         n.captured_at + w.hours * interval '1 hour', n.data
    FROM new_rows n
    JOIN (SELECT s.id, mcloud_private.hot_stored_hours(p.config::jsonb, s.component_name, s.method_name) AS hours
            FROM public.capture_sources s
            JOIN public.robot_parts p ON p.id = s.part_id AND p.organization_id = s.organization_id
           WHERE s.id IN (SELECT DISTINCT source_id FROM new_rows)) w ON w.id = n.source_id
   WHERE w.hours > 0 AND n.captured_at + w.hours * interval '1 hour' > now()
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;
