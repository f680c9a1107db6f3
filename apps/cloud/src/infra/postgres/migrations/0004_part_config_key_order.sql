-- A part's configuration is a user document: keep it exactly as written (key order included), which
-- jsonb does not (it sorts keys). `json` stores the text and still supports ->, ->> and json_* functions.
ALTER TABLE robot_parts ALTER COLUMN config DROP DEFAULT;
ALTER TABLE robot_parts ALTER COLUMN config TYPE json USING config::json;
ALTER TABLE robot_parts ALTER COLUMN config SET DEFAULT '{}';

-- History snapshots embed the configuration too.
ALTER TABLE part_history ALTER COLUMN old_part TYPE json USING old_part::json;
