-- Classifications of binary data (wire Annotations.classifications: label, optional confidence), uploaded
-- in SensorMetadata.annotations and returned in BinaryMetadata.annotations. Deleted with their item.
CREATE TABLE classifications (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL,
  binary_id text NOT NULL REFERENCES binary_data (id) ON DELETE CASCADE,
  label text NOT NULL,
  confidence double precision,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX classifications_binary ON classifications (binary_id);
CREATE INDEX classifications_label ON classifications (organization_id, label);
