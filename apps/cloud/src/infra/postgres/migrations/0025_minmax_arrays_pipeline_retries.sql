-- 1. $min/$max compare arrays as whole values in BSON order (MongoDB: "if the expression resolves to an
--    array, $max does not traverse the array and compares the array as a whole"): element by element, each
--    by type rank then value, a prefix before the longer array. mql_minmax_key used the array's JSON text,
--    so [10] sorted before [9]. mql_order_key(value) is a text that sorts (COLLATE "C") in that order for
--    null, numbers, strings, arrays, ObjectIds, booleans and dates at any depth; embedded documents use
--    their JSON text as before (field by field in storage order, see docs/mql.md).
--    Numbers: sign class (0 negative, 1 zero, 2 positive), then the decimal exponent offset by 500000 in 7
--    digits (inverted for negatives), then the significant digits (complemented for negatives, closed by
--    ':' which sorts after every digit). Each array element ends with chr(2), below every key character.
CREATE FUNCTION sensordata.mql_number_key(value numeric) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  plain text := trim_scale(abs(value))::text;
  whole text := split_part(plain, '.', 1);
  fraction text := split_part(plain, '.', 2);
  exponent integer;
  digits text;
BEGIN
  IF value = 0 THEN RETURN '1'; END IF;
  IF whole <> '0' THEN
    exponent := length(whole) - 1;
    digits := rtrim(whole || fraction, '0');
  ELSE
    exponent := -(length(fraction) - length(ltrim(fraction, '0')) + 1);
    digits := rtrim(ltrim(fraction, '0'), '0');
  END IF;
  IF value > 0 THEN RETURN '2' || lpad((500000 + exponent)::text, 7, '0') || digits; END IF;
  RETURN '0' || lpad((500000 - exponent)::text, 7, '0') || translate(digits, '0123456789', '9876543210') || ':';
END
$$;

CREATE FUNCTION sensordata.mql_order_key(value jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  element jsonb;
  result text;
BEGIN
  CASE sensordata.mql_rank(value)
    WHEN 1 THEN RETURN '1';
    WHEN 2 THEN RETURN '2' || sensordata.mql_number_key(value::numeric);
    WHEN 3 THEN RETURN '3' || (value #>> '{}');
    WHEN 5 THEN
      result := '5';
      FOR element IN SELECT jsonb_array_elements(value) LOOP
        result := result || sensordata.mql_order_key(element) || chr(2);
      END LOOP;
      RETURN result;
    WHEN 6 THEN RETURN '6' || (value ->> '$oid');
    WHEN 7 THEN RETURN '7' || CASE WHEN value::boolean THEN '1' ELSE '0' END;
    WHEN 8 THEN RETURN '8' || lpad(((value -> '$date')::numeric + 100000000000000000)::bigint::text, 19, '0');
    ELSE RETURN '4' || value::text;
  END CASE;
END
$$;

CREATE OR REPLACE FUNCTION sensordata.mql_minmax_key(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) IN ('string', 'object', 'array', 'boolean') THEN
  CASE sensordata.mql_rank(value)
    WHEN 3 THEN '3' || (value #>> '{}')
    WHEN 5 THEN sensordata.mql_order_key(value)
    WHEN 6 THEN '6' || (value ->> '$oid')
    WHEN 7 THEN '7' || value::text
    WHEN 8 THEN '8' || lpad(((value -> '$date')::numeric + 100000000000000000)::bigint::text, 19, '0')
    ELSE sensordata.mql_rank(value)::text || value::text END || chr(1) || value::text END $$;

GRANT EXECUTE ON FUNCTION sensordata.mql_number_key(numeric), sensordata.mql_order_key(jsonb) TO mcloud_query;

-- 2. Pipeline runs that fail for a reason that may pass (an internal error, the database busy, a run that
--    timed out or went stale) are retried with backoff a bounded number of times. `attempt` counts the runs
--    of a window since its last success (1 for a scheduled, backfill, late-data or missed run);
--    `retry_pending` marks a failed run whose window the scheduler still has to retry or give up on.
ALTER TABLE data_pipeline_runs
  ADD COLUMN attempt integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
  ADD COLUMN retry_pending boolean NOT NULL DEFAULT false;
CREATE INDEX data_pipeline_runs_retry ON data_pipeline_runs (ended_at) WHERE retry_pending;
