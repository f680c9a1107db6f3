-- A hot-store copy never silently escapes a customer's unique index (docs/custom-indexes.md).
--
-- (Numbered 0032: 0031 went to the rollup hour bins while this was written; a database that ran it as
-- 0031 runs it again harmlessly — IF NOT EXISTS, CREATE OR REPLACE.)
--
-- A unique hot-store index leaves out documents whose key reaches an array (0015, index-sql.ts: MongoDB
-- enforces such an index per array element across documents, which no PostgreSQL index can). CreateIndex
-- refuses the index while such documents exist, but until now a reading uploaded LATER with an array at a
-- key path was still copied into `hot_readings`, outside the index: HOT_STORAGE then showed documents that
-- MongoDB's unique index would have refused, and the index silently stopped meaning "unique".
--
-- Now the copy trigger leaves such a reading out of the hot store, exactly as it already leaves out a
-- reading whose key duplicates another (0015: ON CONFLICT DO NOTHING): the reading itself is stored in
-- `readings` (STANDARD queries, exports, pipelines see it), the upload succeeds, and only the hot copy is
-- skipped. Refusing the upload instead would make the machine's syncer retry a reading that can never be
-- accepted (or drop it), losing data the customer did not ask to lose over a query-side index.
--
-- Every skip is recorded, so it is not silent: `hot_copy_skips` counts per organization, index and reason
-- ('array_at_unique_key' with the index and path; 'duplicate_key' with index '' — ON CONFLICT does not say
-- which unique index refused the row), with the last reading's id and time. The rule is the one CreateIndex
-- applies: every unique hot-store index of the organization, whatever its partial filter, and a path whose
-- array holds no value there (`[]`, elements without the field) counts as missing, which is not refused.

CREATE TABLE IF NOT EXISTS hot_copy_skips (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  reason text NOT NULL CHECK (reason IN ('array_at_unique_key', 'duplicate_key')),
  index_name text NOT NULL,
  path text NOT NULL,
  skipped_count bigint NOT NULL,
  first_skipped_at timestamptz NOT NULL,
  last_skipped_at timestamptz NOT NULL,
  last_reading_id bigint NOT NULL,
  PRIMARY KEY (organization_id, reason, index_name, path)
);

CREATE OR REPLACE FUNCTION mcloud_private.copy_hot_readings() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  WITH hot AS MATERIALIZED (
    SELECT n.id, n.organization_id, n.source_id, n.captured_at, n.time_requested, n.time_received,
           n.captured_at + w.hours * interval '1 hour' AS expires_at, n.data
      FROM new_rows n
      JOIN (SELECT s.id, mcloud_private.hot_stored_hours(p.config::jsonb, s.component_name, s.method_name) AS hours
              FROM public.capture_sources s
              JOIN public.robot_parts p ON p.id = s.part_id AND p.organization_id = s.organization_id
             WHERE s.id IN (SELECT DISTINCT source_id FROM new_rows)) w ON w.id = n.source_id
     WHERE w.hours > 0 AND n.captured_at + w.hours * interval '1 hour' > now()
  ),
  -- Document key paths of the organizations' unique hot-store indexes (capture-time keys are columns).
  unique_paths AS MATERIALIZED (
    SELECT c.organization_id, c.index_name, k.path,
           CASE WHEN k.path = 'data' THEN '{}'::text[] ELSE string_to_array(substr(k.path, 6), '.') END AS steps
      FROM public.custom_indexes c
     CROSS JOIN LATERAL jsonb_object_keys(c.spec_json::jsonb -> 'key') AS k(path)
     WHERE c.collection_type = 'hot_store'
       AND c.organization_id IN (SELECT DISTINCT organization_id FROM hot)
       AND (c.spec_json::jsonb -> 'options' -> 'unique') = 'true'::jsonb
       AND (k.path = 'data' OR k.path LIKE 'data.%')
  ),
  array_keys AS MATERIALIZED (
    SELECT h.id, h.organization_id, u.index_name, u.path
      FROM hot h
      JOIN unique_paths u ON u.organization_id = h.organization_id
     WHERE sensordata.doc_index_key(h.data, u.steps) = '['
       AND sensordata.mql_path(h.data, u.steps) <> '[]'::jsonb
  ),
  copied AS (
    INSERT INTO public.hot_readings (id, organization_id, source_id, captured_at, time_requested, time_received, expires_at, data)
    SELECT h.id, h.organization_id, h.source_id, h.captured_at, h.time_requested, h.time_received, h.expires_at, h.data
      FROM hot h
     WHERE NOT EXISTS (SELECT 1 FROM array_keys a WHERE a.id = h.id)
    ON CONFLICT DO NOTHING
    RETURNING id
  ),
  skipped AS (
    SELECT a.organization_id, 'array_at_unique_key' AS reason, a.index_name, a.path, a.id
      FROM array_keys a
    UNION ALL
    SELECT h.organization_id, 'duplicate_key', '', '', h.id
      FROM hot h
     WHERE NOT EXISTS (SELECT 1 FROM array_keys a WHERE a.id = h.id)
       AND NOT EXISTS (SELECT 1 FROM copied c WHERE c.id = h.id)
  )
  INSERT INTO public.hot_copy_skips AS k
         (organization_id, reason, index_name, path, skipped_count, first_skipped_at, last_skipped_at, last_reading_id)
  SELECT organization_id, reason, index_name, path, count(*), now(), now(), max(id)
    FROM skipped
   GROUP BY organization_id, reason, index_name, path
  ON CONFLICT (organization_id, reason, index_name, path) DO UPDATE
     SET skipped_count = k.skipped_count + excluded.skipped_count,
         last_skipped_at = excluded.last_skipped_at,
         last_reading_id = excluded.last_reading_id;
  RETURN NULL;
END
$$;
