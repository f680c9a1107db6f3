-- Data plane: tabular readings (time-partitioned, for hundreds of millions of rows), binary items in a
-- blob store, bounding boxes, datasets and upload receipts (idempotent retries).

-- A capture source is the metadata every reading of one upload shares (part, component, method,
-- parameters, tags). Readings point at it, so rows stay small, metadata de-duplicates for free and
-- "latest per source" is one index probe.
CREATE TABLE capture_sources (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL,
  location_id text NOT NULL,
  robot_id uuid NOT NULL,
  part_id uuid NOT NULL,
  component_type text NOT NULL,
  component_name text NOT NULL,
  method_name text NOT NULL,
  method_parameters jsonb NOT NULL DEFAULT '{}',
  tags text[] NOT NULL DEFAULT '{}',
  source_hash bytea NOT NULL,
  UNIQUE (organization_id, source_hash)
);
CREATE INDEX capture_sources_lookup ON capture_sources (organization_id, part_id, component_name, method_name);

CREATE SEQUENCE readings_id_seq AS bigint;

-- Partitioned by month of capture time; partitions are created on demand by the ingest path.
CREATE TABLE readings (
  id bigint NOT NULL DEFAULT nextval('readings_id_seq'),
  organization_id uuid NOT NULL,
  source_id bigint NOT NULL,
  captured_at timestamptz NOT NULL,
  time_requested timestamptz,
  time_received timestamptz,
  synced_at timestamptz NOT NULL,
  size_bytes integer NOT NULL,
  data jsonb NOT NULL
) PARTITION BY RANGE (captured_at);
CREATE INDEX readings_organization_time ON readings (organization_id, captured_at, id);
CREATE INDEX readings_source_time ON readings (source_id, captured_at, id);

CREATE TABLE datasets (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

CREATE TABLE binary_data (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL,
  location_id text NOT NULL,
  robot_id uuid NOT NULL,
  part_id uuid NOT NULL,
  component_type text NOT NULL DEFAULT '',
  component_name text NOT NULL DEFAULT '',
  method_name text NOT NULL DEFAULT '',
  method_parameters jsonb NOT NULL DEFAULT '{}',
  file_name text NOT NULL DEFAULT '',
  file_ext text NOT NULL DEFAULT '',
  mime_type text NOT NULL DEFAULT '',
  tags text[] NOT NULL DEFAULT '{}',
  dataset_ids text[] NOT NULL DEFAULT '{}',
  captured_at timestamptz NOT NULL,
  time_requested timestamptz,
  time_received timestamptz,
  synced_at timestamptz NOT NULL,
  size_bytes bigint NOT NULL,
  sha256 text NOT NULL,
  blob_key text NOT NULL,
  internal boolean NOT NULL DEFAULT false
);
CREATE INDEX binary_data_organization_time ON binary_data (organization_id, captured_at, id);
CREATE INDEX binary_data_part ON binary_data (part_id, component_name, method_name);
CREATE INDEX binary_data_tags ON binary_data USING gin (tags);
CREATE INDEX binary_data_datasets ON binary_data USING gin (dataset_ids);

CREATE TABLE bounding_boxes (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL,
  binary_id text NOT NULL REFERENCES binary_data (id) ON DELETE CASCADE,
  label text NOT NULL,
  x_min double precision NOT NULL,
  y_min double precision NOT NULL,
  x_max double precision NOT NULL,
  y_max double precision NOT NULL,
  confidence double precision,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bounding_boxes_binary ON bounding_boxes (binary_id);
CREATE INDEX bounding_boxes_label ON bounding_boxes (organization_id, label);

-- A retried upload of the same capture (same part, file name and content) returns the stored IDs.
CREATE TABLE upload_receipts (
  organization_id uuid NOT NULL,
  idempotency_key bytea NOT NULL,
  file_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, idempotency_key)
);
