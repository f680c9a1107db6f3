-- Database users (ConfigureDatabaseUser) only read: nobody but the cloud needs temporary tables in its
-- database, and a BI user's temporary tables could fill the disk every organization shares (their sorts'
-- temporary files are capped by the role's temp_file_limit, database-users.ts). PostgreSQL grants TEMPORARY
-- to PUBLIC by default; the cloud (the database's owner or a superuser) keeps it. A role that is neither
-- cannot revoke it; PostgreSQL then only warns.
DO $$
BEGIN
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
  EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO %I', current_database(), current_user);
END
$$;
-- Users created before get the temporary-file cap of the new ones (a superuser cloud may set it).
DO $$
DECLARE
  name text;
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    FOR name IN SELECT u.role_name FROM mcloud_private.database_users u
                  JOIN pg_roles r ON r.rolname = u.role_name LOOP
      EXECUTE format('ALTER ROLE %I SET temp_file_limit = %L', name, '1GB');
    END LOOP;
  END IF;
END
$$;
