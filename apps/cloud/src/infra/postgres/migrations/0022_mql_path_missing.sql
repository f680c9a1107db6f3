-- A field path below a missing value is missing. mql_get(NULL, step) fell through to its array branch and
-- answered '[]', so e.g. {$max: '$odd.k.u'} over a computed `odd` that was missing in a document gave []
-- instead of skipping it. STRICT: NULL in, NULL out, without entering the function.
ALTER FUNCTION sensordata.mql_get(jsonb, text) STRICT;
ALTER FUNCTION sensordata.mql_path(jsonb, text[]) STRICT;
