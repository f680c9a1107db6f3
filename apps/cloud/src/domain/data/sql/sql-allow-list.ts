/**
 * What a user's SQL may contain: parse-tree node types, functions and cast types. Everything else is
 * refused by name before PostgreSQL sees the statement (the database enforces isolation on its own as
 * well; see query-access/organization-query.ts).
 */

/** libpg-query node types a read-only query over `readings` needs. */
export const allowedNodeTypes: ReadonlySet<string> = new Set([
  'RawStmt',
  'SelectStmt',
  'ResTarget',
  'ColumnRef',
  'String',
  'Integer',
  'Float',
  'Boolean',
  'BitString',
  'A_Const',
  'A_Star',
  'A_Expr',
  'BoolExpr',
  'FuncCall',
  'TypeCast',
  'TypeName',
  'SortBy',
  'RangeVar',
  'Alias',
  'JoinExpr',
  'RangeSubselect',
  'RangeFunction',
  'SubLink',
  'CaseExpr',
  'CaseWhen',
  'CoalesceExpr',
  'MinMaxExpr',
  'NullTest',
  'BooleanTest',
  'A_ArrayExpr',
  'A_Indirection',
  'A_Indices',
  'WithClause',
  'CommonTableExpr',
  'WindowDef',
  'SQLValueFunction',
  'CollateClause',
  'RowExpr',
  'GroupingSet',
  'List',
  'ColumnDef',
  'NamedArgExpr',
  'JsonIsPredicate',
]);

/** How a refused node type is named in the error. */
export function describeNodeType(type: string): string {
  const statements: Record<string, string> = {
    InsertStmt: 'INSERT',
    UpdateStmt: 'UPDATE',
    DeleteStmt: 'DELETE',
    MergeStmt: 'MERGE',
    VariableSetStmt: 'SET',
    VariableShowStmt: 'SHOW',
    TransactionStmt: 'transaction control',
    CopyStmt: 'COPY',
    ExplainStmt: 'EXPLAIN',
    CreateStmt: 'CREATE TABLE',
    CreateTableAsStmt: 'CREATE TABLE AS',
    DropStmt: 'DROP',
    TruncateStmt: 'TRUNCATE',
    AlterTableStmt: 'ALTER TABLE',
    GrantStmt: 'GRANT/REVOKE',
    GrantRoleStmt: 'GRANT/REVOKE role',
    DoStmt: 'DO',
    CallStmt: 'CALL',
    LockStmt: 'LOCK',
    NotifyStmt: 'NOTIFY',
    ListenStmt: 'LISTEN',
    PrepareStmt: 'PREPARE',
    ExecuteStmt: 'EXECUTE',
    DeclareCursorStmt: 'DECLARE CURSOR',
    ParamRef: 'a $n parameter',
    RangeTableSample: 'TABLESAMPLE',
    RangeTableFunc: 'XMLTABLE',
    XmlExpr: 'an XML function',
    XmlSerialize: 'XMLSERIALIZE',
    LockingClause: 'a locking clause (FOR UPDATE/SHARE)',
    IntoClause: 'SELECT INTO',
  };
  if (statements[type]) return statements[type];
  if (type.endsWith('Stmt')) return `the statement ${type.slice(0, -4)}`;
  return type;
}

/**
 * Built-in functions a query may call (unqualified or as `pg_catalog.<name>`): aggregates, window
 * functions, math, text, time, JSON and array helpers. Deliberately absent: anything that reads files or
 * settings, sleeps, signals, touches sequences, large objects, other servers or the catalog
 * (pg_read_file, pg_sleep, current_setting, set_config, dblink, lo_*, nextval, pg_terminate_backend…).
 */
export const allowedFunctions: ReadonlySet<string> = new Set(
  `
count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp bool_and bool_or every
array_agg string_agg json_agg jsonb_agg json_object_agg jsonb_object_agg percentile_cont percentile_disc
mode corr covar_pop covar_samp regr_slope regr_intercept regr_count regr_r2 any_value
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
abs ceil ceiling floor round trunc sqrt cbrt power pow exp ln log log10 mod sign div pi degrees radians
sin cos tan asin acos atan atan2 sinh cosh tanh width_bucket random greatest least gcd lcm factorial
length char_length character_length octet_length lower upper substr substring trim btrim ltrim rtrim replace
concat concat_ws left right position strpos split_part starts_with reverse lpad rpad initcap repeat
regexp_replace regexp_match regexp_matches regexp_like regexp_count regexp_substr regexp_split_to_array
regexp_split_to_table to_char to_number to_hex md5 sha256 translate ascii chr overlay format quote_literal
now date_trunc date_part extract date_bin to_timestamp to_date make_timestamp make_timestamptz make_date
make_time make_interval age timezone isfinite justify_days justify_hours justify_interval
current_date current_time current_timestamp localtime localtimestamp statement_timestamp
transaction_timestamp clock_timestamp
jsonb_typeof json_typeof jsonb_array_length json_array_length jsonb_array_elements json_array_elements
jsonb_array_elements_text json_array_elements_text jsonb_each json_each jsonb_each_text json_each_text
jsonb_object_keys json_object_keys jsonb_extract_path json_extract_path jsonb_extract_path_text
json_extract_path_text jsonb_build_object json_build_object jsonb_build_array json_build_array to_jsonb
to_json jsonb_path_query jsonb_path_query_first jsonb_path_query_array jsonb_path_exists jsonb_path_match
jsonb_strip_nulls json_strip_nulls jsonb_set jsonb_insert jsonb_pretty jsonb_object json_object
jsonb_to_record jsonb_to_recordset json_to_record json_to_recordset row_to_json array_to_json
array_length array_lower array_upper cardinality unnest array_position array_positions array_to_string
string_to_array array_append array_prepend array_cat array_remove array_replace generate_series
generate_subscripts coalesce nullif num_nulls num_nonnulls uuid_extract_timestamp
json_number json_text json_boolean
`
    .trim()
    .split(/\s+/),
);

/** Functions of schema `sensordata` (the JSON helpers of migration 0006). */
export const sensorDataFunctions: ReadonlySet<string> = new Set(['json_number', 'json_text', 'json_boolean']);

/** Types a value may be cast to. */
export const allowedCastTypes: ReadonlySet<string> = new Set(
  `
text varchar bpchar char name bool boolean int2 int4 int8 smallint integer int bigint numeric decimal
float4 float8 real double precision timestamp timestamptz date time timetz interval json jsonb uuid
bytea bit varbit
`
    .trim()
    .split(/\s+/),
);
