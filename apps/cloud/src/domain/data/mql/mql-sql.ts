/**
 * SQL fragments the MQL compiler builds. A value is either jsonb in the compiler's tagged form (dates are
 * `{"$date": ms}`, ObjectIds `{"$oid": hex}`; SQL NULL = missing, JSON null = null) or — while the compiler
 * knows more — a typed SQL value (text, timestamptz, numeric, boolean), which lets `$match` on a column
 * compare natively (`component_name = 'x'`, `time_received >= …`) the way a hand-written query would.
 */

export type SqlType = 'jsonb' | 'text' | 'date' | 'number' | 'bool' | 'oid';

export interface SqlExpr {
  sql: string;
  type: SqlType;
  /** For typed values: SQL NULL means the field is missing (true) or null (false). jsonb: always missing. */
  nullIsMissing: boolean;
  /** A field path through objects (`doc -> 'a' -> 'b'`): cheap enough to evaluate more than once per row. */
  cheap?: boolean;
  /**
   * Set with `cheap`: the same value as `base`'s object path `steps`. A number there is read with one
   * SQL/JSON path walk (`toNumber`, `toFloat`) instead of a type check plus a second walk.
   */
  objectPath?: { base: string; steps: readonly string[] };
  /**
   * A source column equal to this value whenever the value is not NULL (`captured_at`, the indexed partition
   * key, for `time_requested`): a comparison with a non-null literal holds only if it holds on that column
   * too, so the compiler adds it and PostgreSQL prunes partitions and uses the index.
   */
  rangeSql?: string;
}

export function jsonbExpr(sql: string): SqlExpr {
  return { sql, type: 'jsonb', nullIsMissing: true };
}

export function typedExpr(sql: string, type: Exclude<SqlType, 'jsonb'>, nullIsMissing = false): SqlExpr {
  return { sql, type, nullIsMissing };
}

/** A SQL string literal (standard_conforming_strings is on, so only quotes need doubling). */
export function quoteText(value: string): string {
  if (value.includes('\u0000')) throw new Error('NUL character in a string literal');
  return `'${value.replaceAll("'", "''")}'`;
}

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function jsonbLiteral(value: unknown): string {
  return `${quoteText(JSON.stringify(value))}::jsonb`;
}

export function textArrayLiteral(values: readonly string[]): string {
  return `ARRAY[${values.map(quoteText).join(', ')}]::text[]`;
}

/** The value as tagged jsonb (missing stays SQL NULL; a typed null becomes JSON null). */
export function toJsonb(expr: SqlExpr): string {
  let converted: string;
  switch (expr.type) {
    case 'jsonb':
      return expr.sql;
    case 'date':
      converted = `mql_date(${expr.sql})`;
      break;
    case 'oid':
      converted = `jsonb_build_object('$oid', ${expr.sql})`;
      break;
    default:
      converted = `to_jsonb(${expr.sql})`;
  }
  return expr.nullIsMissing ? converted : `COALESCE(${converted}, 'null'::jsonb)`;
}

export function asJsonb(expr: SqlExpr): SqlExpr {
  return jsonbExpr(toJsonb(expr));
}

/**
 * The number at an object path, NULL for anything else, walking the document once: in strict mode a
 * missing key or an array on the way is an error, and unary `+` is an error for every non-number (strings
 * are not converted), which JSON_VALUE answers with NULL. The same as `mql_num(COALESCE(v -> 'a' -> 'b', …))`:
 * when `->` finds nothing, the array-mapping walk yields an array or nothing, never a number.
 */
function jsonPathNumber(path: NonNullable<SqlExpr['objectPath']>, returning: string): string {
  const jsonPath = `strict +$${path.steps.map((step) => `.${JSON.stringify(step)}`).join('')}`;
  return `JSON_VALUE((${path.base}), ${quoteText(jsonPath)} RETURNING ${returning})`;
}

/** numeric, NULL unless the value is a number. */
export function toNumber(expr: SqlExpr): string {
  if (expr.type === 'number') return expr.sql;
  if (expr.objectPath) return jsonPathNumber(expr.objectPath, 'numeric');
  if (expr.type === 'jsonb') return `mql_num(${expr.sql})`;
  return 'NULL::numeric';
}

export function toFloat(expr: SqlExpr): string {
  if (expr.type === 'number') return `(${expr.sql})::double precision`;
  if (expr.objectPath) return jsonPathNumber(expr.objectPath, 'double precision');
  if (expr.type === 'jsonb') return `mql_float(${expr.sql})`;
  return 'NULL::double precision';
}

/** text, NULL unless the value is a string. */
export function toText(expr: SqlExpr): string {
  if (expr.type === 'text') return expr.sql;
  if (expr.type === 'jsonb') return `mql_str(${expr.sql})`;
  return 'NULL::text';
}

/** timestamptz, NULL unless the value is a date. */
export function toTimestamp(expr: SqlExpr): string {
  if (expr.type === 'date') return expr.sql;
  if (expr.type === 'jsonb') return `mql_ts(${expr.sql})`;
  return 'NULL::timestamptz';
}

/** Aggregation truthiness as a non-null SQL boolean. */
export function toTruthy(expr: SqlExpr): string {
  switch (expr.type) {
    case 'bool':
      return `COALESCE(${expr.sql}, false)`;
    case 'number':
      return `COALESCE(${expr.sql} <> 0, false)`;
    case 'jsonb':
      return `COALESCE(mql_truthy(${expr.sql}), false)`;
    default:
      return `(${expr.sql} IS NOT NULL)`;
  }
}

/** `(a AND b AND …)`; `true` when empty. */
export function sqlAnd(parts: readonly string[]): string {
  if (parts.length === 0) return 'true';
  if (parts.length === 1) return parts[0] as string;
  return `(${parts.join(' AND ')})`;
}

export function sqlOr(parts: readonly string[]): string {
  if (parts.length === 0) return 'false';
  if (parts.length === 1) return parts[0] as string;
  return `(${parts.join(' OR ')})`;
}

/**
 * Columns that order values in BSON order, for ORDER BY / aggregate ordering. An array sorts by its
 * smallest element ascending and its largest descending, and missing equals null (MongoDB's $sort).
 */
export function sortKeys(expr: SqlExpr, descending = false): string[] {
  switch (expr.type) {
    case 'text':
    case 'oid':
      return [`(${expr.sql}) COLLATE "C"`];
    case 'date':
    case 'number':
    case 'bool':
      return [expr.sql];
    default: {
      // Missing sorts as null.
      const value = `mql_sort_value(COALESCE(${expr.sql}, 'null'::jsonb), ${descending})`;
      return [`mql_rank(${value})`, `mql_sort_num(${value})`, `mql_sort_text(${value}) COLLATE "C"`, value];
    }
  }
}
