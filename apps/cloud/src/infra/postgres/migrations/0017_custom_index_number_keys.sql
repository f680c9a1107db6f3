-- Custom index keys that order numbers, so range conditions ($gt, $gte, $lt, $lte) can use an index too.
--
-- `sensordata.doc_index_key` (0015) wrote a number as its trimmed decimal text, which sorts as text
-- ('10' < '9'). Now a number is 'n' + 16 lowercase hex digits of its IEEE double, sign-adjusted so that
-- the text order is the numeric order (in the C collation the embedded PostgreSQL uses; in any collation
-- these equal-length keys keep their order). The map is monotonic, not one-to-one (numbers beyond double
-- precision share a key, beyond ±1e308 they are ±Infinity, below 1e-307 in magnitude 0), so the MQL
-- conditions built on it are necessary, never sufficient: `x > 5` implies `key(x) >= key(5)`, and the
-- full condition is always checked as well. Everything else is unchanged: NULL missing, '[' array met,
-- '{' document, strings/booleans/null as JSON text, at most 100 characters. Still never raises; LEAKPROOF
-- is set again (CREATE OR REPLACE resets it). Existing valid custom indexes are rebuilt with the new keys
-- (a unique one whose keys now collide is dropped with a warning rather than failing the migration).

CREATE OR REPLACE FUNCTION sensordata.doc_index_key(doc jsonb, path text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog
AS $$
DECLARE
  value jsonb := doc;
  step text;
  n numeric;
  f double precision;
  bits bigint;
BEGIN
  FOREACH step IN ARRAY path LOOP
    IF jsonb_typeof(value) = 'array' THEN
      RETURN '[';
    END IF;
    value := value -> step;
    IF value IS NULL THEN
      RETURN NULL;
    END IF;
  END LOOP;
  CASE jsonb_typeof(value)
    WHEN 'array' THEN
      RETURN '[';
    WHEN 'object' THEN
      RETURN '{';
    WHEN 'number' THEN
      n := value::numeric;
      f := CASE
        WHEN n > 1e308 THEN 'Infinity'::double precision
        WHEN n < -1e308 THEN '-Infinity'::double precision
        WHEN abs(n) < 1e-307 THEN 0
        ELSE n::double precision
      END;
      bits := ('x' || encode(float8send(f), 'hex'))::bit(64)::bigint;
      bits := CASE WHEN bits >= 0 THEN bits # (-9223372036854775807 - 1) ELSE ~bits END;
      RETURN 'n' || lpad(to_hex(bits), 16, '0');
    ELSE
      RETURN left(value::text, 100);
  END CASE;
END
$$;
DO $$
DECLARE
  index_name text;
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION sensordata.doc_index_key(jsonb, text[]) LEAKPROOF;
  END IF;
  FOR index_name IN
    SELECT k.relname FROM pg_index i JOIN pg_class k ON k.oid = i.indexrelid
     WHERE k.relname ~ '^cix_[0-9a-f]{24}$' AND i.indisvalid AND k.relnamespace = 'public'::regnamespace
  LOOP
    BEGIN
      EXECUTE format('REINDEX INDEX public.%I', index_name);
    EXCEPTION WHEN unique_violation THEN
      -- Distinct numbers that are one double now collide in a unique index: it cannot hold any more.
      RAISE WARNING 'custom index % dropped: its unique keys collide under the new number keys', index_name;
      DELETE FROM public.custom_indexes WHERE pg_index_name = index_name;
      EXECUTE format('DROP INDEX public.%I', index_name);
    END;
  END LOOP;
END
$$;
