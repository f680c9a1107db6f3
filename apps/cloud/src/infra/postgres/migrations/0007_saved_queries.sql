-- Saved MQL queries (CreateSavedQuery … ListSavedQueries; TabularDataByMQL's query_prefix_name runs one
-- by name) and the SQL helpers the MQL compiler (domain/data/mql) emits.

CREATE TABLE saved_queries (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- Each stage as the BSON bytes the client sent (Python decodes them with bson.decode).
  stages bytea[] NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (organization_id, name)
);
CREATE INDEX saved_queries_organization ON saved_queries (organization_id, created_at, id);

-- MQL values live in jsonb. BSON types JSON lacks are tagged like extended JSON: a date is
-- {"$date": <epoch ms>}, an ObjectId {"$oid": "<24 hex>"} (bson/bson-from-json.ts turns them back).
-- SQL NULL is a missing field, JSON null is null. All helpers are immutable; the one-line SQL ones are
-- inlined by the planner. They live in schema sensordata, the only one the query role may use.

-- BSON comparison order (missing < null < numbers < strings < objects < arrays < ObjectId < booleans < dates).
CREATE FUNCTION sensordata.mql_rank(value jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE jsonb_typeof(value)
  WHEN 'number' THEN 2 WHEN 'string' THEN 3 WHEN 'array' THEN 5 WHEN 'boolean' THEN 7 WHEN 'null' THEN 1
  WHEN 'object' THEN CASE WHEN value ? '$date' AND jsonb_typeof(value -> '$date') = 'number' THEN 8
                          WHEN value ? '$oid' THEN 6 ELSE 4 END
  ELSE 0 END $$;

CREATE FUNCTION sensordata.mql_num(value jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN value::numeric END $$;

CREATE FUNCTION sensordata.mql_float(value jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN value::double precision END $$;

CREATE FUNCTION sensordata.mql_str(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'string' THEN value #>> '{}' END $$;

CREATE FUNCTION sensordata.mql_bool(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'boolean' THEN value::boolean END $$;

CREATE FUNCTION sensordata.mql_is_date(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT COALESCE(jsonb_typeof(value -> '$date') = 'number', false) $$;

-- A tagged date → timestamptz (NULL for anything else).
CREATE FUNCTION sensordata.mql_ts(value jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value -> '$date') = 'number'
  THEN 'epoch'::timestamptz + (value -> '$date')::numeric * interval '1 millisecond' END $$;

CREATE FUNCTION sensordata.mql_date(value timestamptz) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT jsonb_build_object('$date', floor(extract(epoch FROM value) * 1000)) $$;

-- Aggregation truthiness: false, null, missing and 0 are false; everything else (also "" and []) is true.
CREATE FUNCTION sensordata.mql_truthy(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE jsonb_typeof(value)
  WHEN 'boolean' THEN value::boolean WHEN 'number' THEN value::numeric <> 0 WHEN 'null' THEN false
  WHEN 'string' THEN true WHEN 'object' THEN true WHEN 'array' THEN true ELSE false END $$;

-- Order within a type: numbers and dates by value, strings and ObjectIds bytewise, booleans false < true.
CREATE FUNCTION sensordata.mql_sort_num(value jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE jsonb_typeof(value) WHEN 'number' THEN value::numeric
  WHEN 'boolean' THEN CASE WHEN value::boolean THEN 1 ELSE 0 END
  WHEN 'object' THEN CASE WHEN jsonb_typeof(value -> '$date') = 'number' THEN (value -> '$date')::numeric END END $$;

CREATE FUNCTION sensordata.mql_sort_text(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE jsonb_typeof(value) WHEN 'string' THEN value #>> '{}'
  WHEN 'object' THEN CASE WHEN jsonb_typeof(value -> '$oid') = 'string' THEN value ->> '$oid' END END $$;

-- $sort by an array field uses its smallest element ascending and its largest descending; an empty array
-- sorts before null (like a missing field).
CREATE FUNCTION sensordata.mql_sort_value(value jsonb, descending boolean) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) = 'array' THEN
  CASE WHEN descending THEN
    (SELECT e FROM jsonb_array_elements(value) e
      ORDER BY sensordata.mql_rank(e) DESC, sensordata.mql_sort_num(e) DESC, sensordata.mql_sort_text(e) COLLATE "C" DESC, e DESC LIMIT 1)
  ELSE
    (SELECT e FROM jsonb_array_elements(value) e
      ORDER BY sensordata.mql_rank(e), sensordata.mql_sort_num(e), sensordata.mql_sort_text(e) COLLATE "C", e LIMIT 1)
  END
  ELSE value END $$;

-- Full BSON comparison (-1, 0, 1) for aggregation expressions ($cmp, $gt … between arbitrary values).
CREATE FUNCTION sensordata.mql_cmp(a jsonb, b jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE
  WHEN sensordata.mql_rank(a) <> sensordata.mql_rank(b) THEN sign(sensordata.mql_rank(a) - sensordata.mql_rank(b))::integer
  WHEN sensordata.mql_rank(a) <= 1 THEN 0
  WHEN sensordata.mql_sort_num(a) IS NOT NULL THEN sign(sensordata.mql_sort_num(a) - sensordata.mql_sort_num(b))::integer
  WHEN sensordata.mql_sort_text(a) IS NOT NULL THEN
    CASE WHEN sensordata.mql_sort_text(a) COLLATE "C" < sensordata.mql_sort_text(b) THEN -1
         WHEN sensordata.mql_sort_text(a) = sensordata.mql_sort_text(b) THEN 0 ELSE 1 END
  WHEN a = b THEN 0 WHEN a < b THEN -1 ELSE 1 END $$;

-- A text key that sorts in BSON order for non-number values ($min/$max), carrying the value after the
-- last chr(1): numbers are aggregated natively, this covers the rest.
CREATE FUNCTION sensordata.mql_minmax_key(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(value) IN ('string', 'object', 'array', 'boolean') THEN
  sensordata.mql_rank(value)::text ||
  CASE sensordata.mql_rank(value)
    WHEN 3 THEN value #>> '{}'
    WHEN 6 THEN value ->> '$oid'
    WHEN 7 THEN value::text
    WHEN 8 THEN lpad(((value -> '$date')::numeric + 100000000000000000)::bigint::text, 19, '0')
    ELSE value::text END || chr(1) || value::text END $$;

CREATE FUNCTION sensordata.mql_minmax_value(key text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT split_part(key, chr(1), -1)::jsonb $$;

-- Expression field paths: one step into a value; arrays map the step over their elements (missing dropped).
CREATE FUNCTION sensordata.mql_get(value jsonb, step text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
  element jsonb;
  picked jsonb;
  result jsonb := '[]';
BEGIN
  IF jsonb_typeof(value) = 'object' THEN
    IF value ? '$date' AND jsonb_typeof(value -> '$date') = 'number' THEN RETURN NULL; END IF;
    RETURN value -> step;
  END IF;
  IF jsonb_typeof(value) <> 'array' THEN RETURN NULL; END IF;
  FOR element IN SELECT jsonb_array_elements(value) LOOP
    IF jsonb_typeof(element) IN ('object', 'array') THEN
      picked := sensordata.mql_get(element, step);
      IF picked IS NOT NULL THEN result := result || jsonb_build_array(picked); END IF;
    END IF;
  END LOOP;
  RETURN result;
END
$$;

-- COST 1: the planner then still inlines the one-line helpers around `COALESCE(v #> path, mql_path(v, path))`
-- (it refuses to inline a function whose repeated argument looks expensive).
CREATE FUNCTION sensordata.mql_path(value jsonb, steps text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 1
AS $$
DECLARE
  step text;
BEGIN
  FOREACH step IN ARRAY steps LOOP
    value := sensordata.mql_get(value, step);
    IF value IS NULL THEN RETURN NULL; END IF;
  END LOOP;
  RETURN value;
END
$$;

-- Sets a dotted path inside a value ($addFields/$set with 'a.b'): through arrays into every element,
-- replacing non-objects with objects. NULL (missing) leaves the value unchanged.
CREATE FUNCTION sensordata.mql_set(target jsonb, steps text[], new_value jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
  head text := steps[1];
  tail text[] := steps[2:];
  result jsonb := '[]';
  element jsonb;
BEGIN
  IF new_value IS NULL THEN RETURN target; END IF;
  IF jsonb_typeof(target) = 'array' THEN
    FOR element IN SELECT jsonb_array_elements(target) LOOP
      result := result || jsonb_build_array(CASE WHEN jsonb_typeof(element) = 'object'
        THEN sensordata.mql_set(element, steps, new_value) ELSE element END);
    END LOOP;
    RETURN result;
  END IF;
  IF jsonb_typeof(target) IS DISTINCT FROM 'object' OR sensordata.mql_is_date(target) THEN
    target := '{}';
  END IF;
  IF cardinality(tail) = 0 THEN
    RETURN target || jsonb_build_object(head, new_value);
  END IF;
  RETURN target || jsonb_build_object(head, sensordata.mql_set(target -> head, tail, new_value));
END
$$;

-- Projection of embedded documents: spec is a tree {"b": true, "c": {"d": true}} of paths to keep
-- (keep = true) or to drop (keep = false); arrays apply it to each element.
CREATE FUNCTION sensordata.mql_prune(target jsonb, spec jsonb, keep boolean) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
  result jsonb;
  element jsonb;
  entry record;
BEGIN
  IF jsonb_typeof(target) = 'array' THEN
    result := '[]';
    FOR element IN SELECT jsonb_array_elements(target) LOOP
      IF jsonb_typeof(element) IN ('object', 'array') AND NOT sensordata.mql_is_date(element) THEN
        result := result || jsonb_build_array(sensordata.mql_prune(element, spec, keep));
      ELSIF NOT keep THEN
        result := result || jsonb_build_array(element);
      END IF;
    END LOOP;
    RETURN result;
  END IF;
  IF jsonb_typeof(target) IS DISTINCT FROM 'object' OR sensordata.mql_is_date(target) THEN
    RETURN CASE WHEN keep THEN NULL ELSE target END;
  END IF;
  result := CASE WHEN keep THEN '{}'::jsonb ELSE target END;
  FOR entry IN SELECT key, value FROM jsonb_each(spec) LOOP
    IF NOT target ? entry.key THEN CONTINUE; END IF;
    IF jsonb_typeof(entry.value) = 'boolean' THEN
      IF keep THEN result := result || jsonb_build_object(entry.key, target -> entry.key);
      ELSE result := result - entry.key; END IF;
    ELSE
      element := sensordata.mql_prune(target -> entry.key, entry.value, keep);
      IF element IS NOT NULL THEN result := result || jsonb_build_object(entry.key, element); END IF;
    END IF;
  END LOOP;
  RETURN result;
END
$$;

-- Errors the aggregation semantics require at run time (e.g. $replaceRoot with a non-document). STABLE,
-- not IMMUTABLE: the planner must not evaluate it while folding constants.
CREATE FUNCTION sensordata.mql_fail(message text) RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$ BEGIN RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = message; END $$;

GRANT EXECUTE ON FUNCTION
  sensordata.mql_rank(jsonb), sensordata.mql_num(jsonb), sensordata.mql_float(jsonb), sensordata.mql_str(jsonb),
  sensordata.mql_bool(jsonb), sensordata.mql_is_date(jsonb), sensordata.mql_ts(jsonb),
  sensordata.mql_date(timestamptz), sensordata.mql_truthy(jsonb), sensordata.mql_sort_num(jsonb),
  sensordata.mql_sort_text(jsonb), sensordata.mql_sort_value(jsonb, boolean), sensordata.mql_cmp(jsonb, jsonb), sensordata.mql_minmax_key(jsonb),
  sensordata.mql_minmax_value(text), sensordata.mql_get(jsonb, text), sensordata.mql_path(jsonb, text[]),
  sensordata.mql_set(jsonb, text[], jsonb), sensordata.mql_prune(jsonb, jsonb, boolean), sensordata.mql_fail(text)
  TO mcloud_query;
