-- Data pipelines (DataPipelinesService, wire-protocol §2.7): a pipeline runs its MQL stages over each cron
-- window [data_start, data_end) of its organization's data and writes the output documents to its sink.
-- Runs execute on the job queue; the run row is the record the API lists (SCHEDULED → STARTED →
-- COMPLETED/FAILED) and, with its unique window, what makes each window run once across replicas.

CREATE TABLE data_pipelines (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- Each stage as the BSON bytes the client sent.
  stages bytea[] NOT NULL,
  -- 5-field cron expression, UTC.
  schedule text NOT NULL,
  enable_backfill boolean NOT NULL,
  data_source_type text NOT NULL CHECK (data_source_type IN ('standard', 'hot-storage')),
  enabled boolean NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- End of the latest window the scheduler has planned; windows ending at or before it have a run.
  planned_until timestamptz,
  UNIQUE (organization_id, name)
);
CREATE INDEX data_pipelines_organization ON data_pipelines (organization_id, created_at, id);
CREATE INDEX data_pipelines_enabled ON data_pipelines (planned_until) WHERE enabled;

CREATE TABLE data_pipeline_runs (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL,
  pipeline_id uuid NOT NULL REFERENCES data_pipelines (id) ON DELETE CASCADE,
  data_start timestamptz NOT NULL,
  data_end timestamptz NOT NULL CHECK (data_end > data_start),
  status text NOT NULL CHECK (status IN ('scheduled', 'started', 'completed', 'failed')),
  error_message text NOT NULL DEFAULT '',
  -- Why the run exists: the cron tick, backfill, late data arriving in a finished window, a window
  -- missed while the pipeline was disabled, or a retry of a run that timed out.
  reason text NOT NULL CHECK (reason IN ('schedule', 'backfill', 'late-data', 'missed', 'retry')),
  scheduled_at timestamptz NOT NULL,
  started_at timestamptz,
  ended_at timestamptz,
  output_documents integer,
  -- The latest run per window is the one whose output the sink holds.
  superseded boolean NOT NULL DEFAULT false
);
-- Listing newest window first (keyset pagination).
CREATE INDEX data_pipeline_runs_listing ON data_pipeline_runs (pipeline_id, data_start DESC, id DESC);
-- At most one run of a window is pending (scheduled or started) at a time.
CREATE UNIQUE INDEX data_pipeline_runs_pending_window ON data_pipeline_runs (pipeline_id, data_start)
  WHERE status IN ('scheduled', 'started');
CREATE INDEX data_pipeline_runs_started ON data_pipeline_runs (started_at) WHERE status = 'started';

-- The output documents of all pipelines (the reference's `sink-<pipeline-id>` collections). `doc` is the
-- whole document as MQL jsonb (dates {"$date": ms}, ObjectIds {"$oid": hex}), `_viam_pipeline_run` included.
-- Custom indexes (CreateIndex with the pipeline sink collection type) are expression indexes on `doc`
-- paths, partial on `pipeline_id`.
CREATE TABLE pipeline_sink (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL,
  pipeline_id uuid NOT NULL REFERENCES data_pipelines (id) ON DELETE CASCADE,
  run_id uuid NOT NULL,
  doc jsonb NOT NULL
);
CREATE INDEX pipeline_sink_pipeline ON pipeline_sink (pipeline_id, id);
CREATE INDEX pipeline_sink_run ON pipeline_sink (run_id);

-- What user queries (MQL with the PIPELINE_SINK source, SQL, BI database users) see: the sink documents of
-- the session's organization only, under the same rule as `sensordata.readings` (0006_query_access.sql).
CREATE VIEW sensordata.pipeline_sink WITH (security_barrier) AS
SELECT
  s.pipeline_id,
  s.run_id,
  s.organization_id::text AS organization_id,
  s.doc
FROM public.pipeline_sink s
WHERE s.organization_id = (SELECT mcloud_private.query_organization());
REVOKE ALL ON sensordata.pipeline_sink FROM PUBLIC;
GRANT SELECT ON sensordata.pipeline_sink TO mcloud_query;
