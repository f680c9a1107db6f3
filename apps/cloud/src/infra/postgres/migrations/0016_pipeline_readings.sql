-- Data pipeline runs read one window of `time_received`, which has no index: through `sensordata.readings`
-- every run scanned all of the organization's readings (every partition). This view is the same documents
-- plus `captured_at` (the partition key, indexed with the organization), so a run also bounds
-- `captured_at` — the window widened by the capture latency margin — and PostgreSQL prunes partitions and
-- uses `readings_organization_time`. Isolation is the same as `sensordata.readings` (0006_query_access.sql);
-- BI database users may read it too (their own organization only). (Briefly numbered 0015, which another
-- migration also used; OR REPLACE keeps databases that applied it under that name working.)
CREATE OR REPLACE VIEW sensordata.pipeline_readings WITH (security_barrier) AS
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
JOIN public.capture_sources s ON s.id = r.source_id AND s.organization_id = r.organization_id
WHERE r.organization_id = (SELECT mcloud_private.query_organization());
REVOKE ALL ON sensordata.pipeline_readings FROM PUBLIC;
GRANT SELECT ON sensordata.pipeline_readings TO mcloud_query;
