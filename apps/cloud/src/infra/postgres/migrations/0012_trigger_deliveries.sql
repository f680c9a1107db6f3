-- Triggers: one delivery per (event, trigger, destination), recorded in the transaction that commits the
-- event (upload, log batch, status change) together with its `trigger-delivery` job, so nothing is lost
-- between commit and send and several replicas deliver each notification once.

CREATE TABLE trigger_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  location_id uuid NOT NULL,
  robot_id uuid NOT NULL,
  part_id uuid NOT NULL,
  trigger_name text NOT NULL,
  event_type text NOT NULL CHECK (event_type IN ('part_online', 'part_offline', 'part_data_ingested',
    'conditional_data_ingested', 'conditional_logs_ingested')),
  notification_type text NOT NULL CHECK (notification_type IN ('webhook', 'email')),
  -- A webhook URL (may hold Basic credentials: never log it unredacted), an address or all_machine_owners.
  destination text NOT NULL,
  -- Standard Webhooks secret (whsec_...) copied from the trigger when the event happened.
  signing_secret text,
  -- The event's facts (TriggerEventFacts in domain/triggers/trigger-delivery.ts); names of the
  -- organization, location and machine are looked up when sending.
  facts jsonb NOT NULL,
  occurred_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'delivered', 'failed')),
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  delivered_at timestamptz,
  last_status_code integer,
  last_error text
);
CREATE INDEX trigger_deliveries_by_part ON trigger_deliveries
  (organization_id, part_id, trigger_name, created_at DESC, id);

-- Every attempt to send one delivery (webhook request or SMTP transaction).
CREATE TABLE trigger_delivery_attempts (
  delivery_id uuid NOT NULL REFERENCES trigger_deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  status_code integer,
  error text,
  PRIMARY KEY (delivery_id, attempt)
);

-- seconds_between_notifications, per part, trigger and destination: the last time a delivery was
-- recorded. Claimed with one conditional upsert in the event's transaction, so concurrent events on
-- several replicas cannot both pass the limit.
CREATE TABLE trigger_rate_limits (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  part_id uuid NOT NULL,
  trigger_name text NOT NULL,
  notification_type text NOT NULL,
  destination text NOT NULL,
  last_recorded_at timestamptz NOT NULL,
  PRIMARY KEY (part_id, trigger_name, notification_type, destination)
);
