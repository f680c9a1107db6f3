-- Trigger delivery bookkeeping (delivery side): the retry window runs from the first attempt of the
-- current round (a redelivery starts a new round), and listings by part newest first without a trigger
-- name, and the 30-day retention, need their own indexes.

ALTER TABLE trigger_deliveries
  ADD COLUMN first_attempt_at timestamptz,
  -- Attempts in the current round (the backoff exponent); attempt_count counts every round.
  ADD COLUMN round_attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN redelivery_count integer NOT NULL DEFAULT 0;

CREATE INDEX trigger_deliveries_by_part_newest ON trigger_deliveries
  (organization_id, part_id, created_at DESC, id DESC);
CREATE INDEX trigger_deliveries_by_age ON trigger_deliveries (created_at);

-- Location IDs are short text IDs (locations.id is text), not UUIDs. The events side fixes this in 0013
-- too; repeating it here is a no-op then, and keeps the delivery side working on its own.
ALTER TABLE trigger_deliveries ALTER COLUMN location_id TYPE text;
