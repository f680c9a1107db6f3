-- Trigger delivery recovery: open (pending or retrying) deliveries by the time they were due, so the
-- periodic pass that re-enqueues deliveries whose job was lost reads only those.
CREATE INDEX trigger_deliveries_open ON trigger_deliveries ((coalesce(next_attempt_at, created_at)))
  WHERE status IN ('pending', 'retrying');
