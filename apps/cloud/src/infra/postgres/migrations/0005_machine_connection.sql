-- Machine connection: live status, online/offline transitions, machine logs.

-- The recorded connection state of a part (source of online/offline transitions). `last_access` is the
-- last machine contact (written at most every few seconds per part); `disconnected_at` is set when the
-- part's live stream ended, so the part shows offline at once instead of after the liveness window.
ALTER TABLE robot_parts ADD COLUMN online boolean NOT NULL DEFAULT false;
ALTER TABLE robot_parts ADD COLUMN disconnected_at timestamptz;
CREATE INDEX robot_parts_online_last_access ON robot_parts (last_access) WHERE online;

-- Every online/offline transition, written in the same transaction as the status change.
CREATE TABLE part_status_changes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL,
  part_id uuid NOT NULL,
  online boolean NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX part_status_changes_part ON part_status_changes (organization_id, part_id, id DESC);

-- Machine logs, one partition per UTC day of receipt (`part_logs_YYYYMMDD`, created on demand and ahead
-- of time). Retention drops whole partitions after 30 days; rows are never deleted one by one. No
-- foreign keys: logs outlive a deleted machine until their partition is dropped.
CREATE TABLE part_logs (
  id bigint GENERATED ALWAYS AS IDENTITY,
  organization_id uuid NOT NULL,
  part_id uuid NOT NULL,
  received_at timestamptz NOT NULL,
  time timestamptz NOT NULL,
  level text NOT NULL,
  host text NOT NULL DEFAULT '',
  logger_name text NOT NULL DEFAULT '',
  message text NOT NULL DEFAULT '',
  caller jsonb,
  stack text NOT NULL DEFAULT '',
  fields jsonb
) PARTITION BY RANGE (received_at);
-- Newest-first pages of one part (GetRobotPartLogs) and "entries after id N" (TailRobotPartLogs).
CREATE INDEX part_logs_part_time ON part_logs (organization_id, part_id, time DESC, id DESC);
CREATE INDEX part_logs_part_id ON part_logs (organization_id, part_id, id);

-- API keys authorized for a machine travel to it in RobotService.Config (the machine checks SDK clients
-- against them), so their secret is also kept sealed (AES-256-GCM under a key derived from the signing
-- key); keys created before this migration have none and are not sent.
ALTER TABLE api_keys ADD COLUMN secret_sealed bytea;
