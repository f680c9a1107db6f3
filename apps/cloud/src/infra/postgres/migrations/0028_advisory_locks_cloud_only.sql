-- Advisory locks belong to the cloud. Its background passes take them (the rollup materializer, index DDL,
-- hot-storage expiry, log and delivery retention) and so do migrations at start-up. PostgreSQL lets every
-- role call the advisory-lock functions, so a database user of ConfigureDatabaseUser (any organization's BI
-- tool) could `SELECT pg_advisory_lock(<key>)` and keep its session open: the materializer would stop for
-- every organization, CreateIndex would wait, and a restarting cloud would hang in its migration lock. The
-- query role does not need them either (user SQL refuses the functions by its allow-list; compiled MQL never
-- calls them). Function privileges are per database, so this touches only the cloud's database.
-- As with set_config (0006): a non-superuser owner of the database cannot revoke a privilege it did not
-- grant; PostgreSQL then only warns, and the functions stay callable by everyone (README, database users).
DO $$
DECLARE
  advisory regprocedure;
BEGIN
  FOR advisory IN
    SELECT p.oid::regprocedure FROM pg_proc p
     WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname LIKE 'pg\_%advisory\_%'
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', advisory);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', advisory, current_user);
  END LOOP;
END
$$;
