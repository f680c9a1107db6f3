-- User queries may use parallel workers: a parallel-unsafe function anywhere in a query forbids them, and
-- the organization check of the `sensordata.readings` view (migration 0006) was declared without a
-- parallel label (= unsafe), which made full scans 2-3× slower than the same statement run directly.
-- It only reads a setting, `session_user` and a table, all of which parallel workers share with the
-- leader (PostgreSQL restores settings and the session and current user in each worker).
ALTER FUNCTION mcloud_private.query_organization() PARALLEL SAFE;
