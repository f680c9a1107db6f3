-- Location IDs are short text IDs (locations.id is text, e.g. "vsxcjz5pjl"), not UUIDs: 0012 declared
-- trigger_deliveries.location_id as uuid, so recording any delivery failed.
ALTER TABLE trigger_deliveries ALTER COLUMN location_id TYPE text;
