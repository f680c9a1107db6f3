-- Fleet: organizations, members, locations, machines (robots), parts, secrets, API keys and roles.
-- Every customer row carries organization_id: it scopes every query and is the future distribution key.

CREATE TABLE signing_keys (
  id text PRIMARY KEY,
  secret bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE organizations (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  public_namespace text UNIQUE,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id uuid PRIMARY KEY,
  email text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE organization_members (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  date_added timestamptz NOT NULL DEFAULT now(),
  last_access timestamptz,
  PRIMARY KEY (organization_id, user_id)
);

CREATE TABLE locations (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  parent_location_id text REFERENCES locations (id) ON DELETE RESTRICT,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX locations_organization ON locations (organization_id);

CREATE TABLE location_secrets (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL,
  location_id text NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
  secret text NOT NULL,
  state smallint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX location_secrets_location ON location_secrets (location_id);

CREATE TABLE robots (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  location_id text NOT NULL REFERENCES locations (id) ON DELETE RESTRICT,
  name text NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (location_id, name)
);
CREATE INDEX robots_organization ON robots (organization_id);

CREATE TABLE robot_parts (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL,
  location_id text NOT NULL,
  robot_id uuid NOT NULL REFERENCES robots (id) ON DELETE CASCADE,
  name text NOT NULL,
  dns_name text NOT NULL UNIQUE,
  main_part boolean NOT NULL DEFAULT false,
  config jsonb NOT NULL DEFAULT '{}',
  revision bigint NOT NULL DEFAULT 1,
  last_updated timestamptz NOT NULL DEFAULT now(),
  last_access timestamptz,
  user_supplied_info jsonb,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (robot_id, name)
);
CREATE UNIQUE INDEX robot_parts_one_main ON robot_parts (robot_id) WHERE main_part;
CREATE INDEX robot_parts_organization ON robot_parts (organization_id);
CREATE INDEX robot_parts_location ON robot_parts (location_id);

CREATE TABLE part_secrets (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL,
  part_id uuid NOT NULL REFERENCES robot_parts (id) ON DELETE CASCADE,
  secret text NOT NULL,
  state smallint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX part_secrets_part ON part_secrets (part_id);

-- One row per configuration edit: the full part state before the edit, who made it and when.
CREATE TABLE part_history (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL,
  part_id uuid NOT NULL REFERENCES robot_parts (id) ON DELETE CASCADE,
  robot_id uuid NOT NULL,
  edited_at timestamptz NOT NULL,
  edited_by_type smallint NOT NULL,
  edited_by_value text NOT NULL,
  old_part jsonb NOT NULL
);
CREATE INDEX part_history_part ON part_history (part_id, id DESC);

-- API key secrets are shown once and stored only as a hash. `generation` grows on rotation so tokens
-- issued for the previous secret stop working.
CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  secret_hash bytea NOT NULL,
  generation integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_organization ON api_keys (organization_id);

CREATE TABLE authorizations (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  identity_type text NOT NULL CHECK (identity_type IN ('api-key', 'user')),
  identity_id text NOT NULL,
  role text NOT NULL CHECK (role IN ('owner', 'operator')),
  resource_type text NOT NULL CHECK (resource_type IN ('organization', 'location', 'robot')),
  resource_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (identity_type, identity_id, role, resource_type, resource_id)
);
CREATE INDEX authorizations_identity ON authorizations (identity_type, identity_id);
CREATE INDEX authorizations_resource ON authorizations (resource_type, resource_id);
