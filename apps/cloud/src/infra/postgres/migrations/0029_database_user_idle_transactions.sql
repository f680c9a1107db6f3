-- Database users (ConfigureDatabaseUser) end a session left idle inside a transaction after 60 s: a BI tool
-- holding a transaction open keeps its lock on `readings`, and creating the next month's partition (ingest
-- of every organization) waits for it, with every later statement on `readings` queued behind. New and
-- reset users get the setting from database-users.ts; this gives it to the users created before.
DO $$
DECLARE
  name text;
BEGIN
  FOR name IN SELECT u.role_name FROM mcloud_private.database_users u
                JOIN pg_roles r ON r.rolname = u.role_name LOOP
    EXECUTE format('ALTER ROLE %I SET idle_in_transaction_session_timeout = 60000', name);
  END LOOP;
END
$$;
