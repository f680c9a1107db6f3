-- Hot storage (TabularDataByMQL data source HOT_STORAGE) and custom indexes (CreateIndex/ListIndexes/DeleteIndex).
--
-- Which readings are hot: a capture method asks for a rolling window with
-- `service_configs[type=data_manager].attributes.capture_methods[].recent_data_store.stored_hours` in the
-- part's config (wire-protocol §4: the upload itself carries no such field). The window is read from the
-- part's CURRENT config whenever readings are written, so a config change applies to the next upload.
--
-- How: a statement-level trigger on `readings` (transition table, so one set operation per COPY/INSERT,
-- not per row; the ingest path's group commit is untouched) copies the rows of hot sources into
-- `hot_readings` with `expires_at = captured_at + stored_hours`. The query view shows only rows not yet
-- expired, so expiry is exact without any write; `expireHotReadings` reclaims space in bounded batches.
-- Hot rows keep the reading's id, so `_id` is the same in STANDARD and HOT_STORAGE results.

CREATE FUNCTION mcloud_private.hot_stored_hours(config jsonb, component text, method text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT max(hours::double precision) FROM (
    SELECT jsonb_path_query(config,
      '$.components[*] ? (@.name == $c).service_configs[*] ? (@.type == "data_manager").attributes.capture_methods[*] ? (@.method == $m).recent_data_store.stored_hours ? (@.type() == "number" && @ > 0)',
      jsonb_build_object('c', component, 'm', method), true) AS hours
    UNION ALL
    SELECT jsonb_path_query(config,
      '$.components[*] ? (@.name == $c).service_config[*] ? (@.type == "data_manager").attributes.capture_methods[*] ? (@.method == $m).recent_data_store.stored_hours ? (@.type() == "number" && @ > 0)',
      jsonb_build_object('c', component, 'm', method), true)
  ) found
$$;

CREATE TABLE hot_readings (
  id bigint NOT NULL,
  organization_id uuid NOT NULL,
  source_id bigint NOT NULL,
  captured_at timestamptz NOT NULL,
  time_requested timestamptz,
  time_received timestamptz,
  expires_at timestamptz NOT NULL,
  data jsonb NOT NULL
);
CREATE INDEX hot_readings_organization_time ON hot_readings (organization_id, captured_at, id);
CREATE INDEX hot_readings_expiry ON hot_readings (expires_at);

CREATE FUNCTION mcloud_private.copy_hot_readings() RETURNS trigger
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
   WHERE w.hours > 0 AND n.captured_at + w.hours * interval '1 hour' > now();
  RETURN NULL;
END
$$;

CREATE TRIGGER readings_copy_hot AFTER INSERT ON readings
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION mcloud_private.copy_hot_readings();

-- Same document columns as sensordata.readings, plus `organization_uuid` (not a document field): the MQL
-- compiler adds `organization_uuid = '<org>'` so the planner can prove an organization's partial custom
-- indexes apply. Isolation still comes from the view's own condition.
CREATE VIEW sensordata.hot_readings WITH (security_barrier) AS
SELECT
  lpad(to_hex(floor(extract(epoch FROM h.captured_at))::bigint), 8, '0') || lpad(to_hex(h.id), 16, '0') AS _id,
  h.organization_id::text AS organization_id,
  s.location_id,
  s.robot_id::text AS robot_id,
  s.part_id::text AS part_id,
  s.component_type,
  s.component_name,
  s.method_name,
  h.time_requested,
  h.time_received,
  s.tags,
  s.method_parameters AS additional_parameters,
  h.data,
  h.organization_id AS organization_uuid
FROM public.hot_readings h
JOIN public.capture_sources s ON s.id = h.source_id AND s.organization_id = h.organization_id
WHERE h.organization_id = (SELECT mcloud_private.query_organization()) AND h.expires_at > now();
REVOKE ALL ON sensordata.hot_readings FROM PUBLIC;
GRANT SELECT ON sensordata.hot_readings TO mcloud_query;

-- Custom indexes: one row per index a customer created; the index itself is a partial expression index
-- (WHERE organization_id = <org>) named `pg_index_name`. `spec_json` keeps the key order as given.
CREATE TABLE custom_indexes (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  collection_type text NOT NULL CHECK (collection_type IN ('hot_store', 'pipeline_sink')),
  pipeline_name text NOT NULL DEFAULT '',
  index_name text NOT NULL,
  spec_json text NOT NULL,
  pg_index_name text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (organization_id, collection_type, pipeline_name, index_name)
);

-- The key of a custom index: the JSON text of the value at a path (NULL when missing). User predicates
-- stay above the views' security barrier unless every function in them is LEAKPROOF; `#>` and jsonb
-- comparison are not, so an index on them could never serve a user query. This function cannot fail or
-- reveal anything for any input (jsonb_extract_path and jsonb_out never raise), and text equality is
-- leakproof, so `doc_key(data, '{a,b}') = '…'` reaches the organization's partial index. Not inlined
-- (the SET clause), so the leakproof mark holds. Marking needs a superuser: otherwise it is created
-- without the mark (indexes then still enforce `unique`, but queries through the view cannot use them).
CREATE FUNCTION sensordata.doc_key(doc jsonb, path text[]) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog
AS $$ SELECT (doc #> path)::text $$;
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION sensordata.doc_key(jsonb, text[]) LEAKPROOF;
  END IF;
END
$$;
GRANT EXECUTE ON FUNCTION sensordata.doc_key(jsonb, text[]) TO mcloud_query;
