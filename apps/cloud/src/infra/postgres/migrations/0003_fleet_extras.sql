-- Fleet extras for AppService: restart requests, organization/location settings clients can edit.

-- Set by AppService.MarkPartForRestart; RobotService.NeedsRestart reads and clears it.
ALTER TABLE robot_parts ADD COLUMN needs_restart boolean NOT NULL DEFAULT false;

ALTER TABLE organizations ADD COLUMN default_region text NOT NULL DEFAULT '';
ALTER TABLE organizations ADD COLUMN cid text;

-- StorageConfig.region of a location.
ALTER TABLE locations ADD COLUMN region text NOT NULL DEFAULT '';

CREATE INDEX robots_location ON robots (location_id);
CREATE INDEX organization_members_user ON organization_members (user_id);
