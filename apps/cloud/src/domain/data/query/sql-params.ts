/** Collects positional parameters while a query is assembled: `params.add(value)` returns `$n`. */
export interface SqlParams {
  readonly values: unknown[];
  add(value: unknown): string;
}

export function createSqlParams(): SqlParams {
  const values: unknown[] = [];
  return {
    values,
    add(value: unknown): string {
      values.push(value);
      return `$${values.length}`;
    },
  };
}

/** `AND`-joins conditions; an empty list is `true`. */
export function allOf(conditions: readonly string[]): string {
  return conditions.length === 0 ? 'true' : conditions.map((condition) => `(${condition})`).join(' AND ');
}

/** SQL for a microsecond epoch parameter as timestamptz (exact, no floating point). */
export function timestampFromMicrosSql(placeholder: string): string {
  return `(timestamptz 'epoch' + ${placeholder}::bigint * interval '1 microsecond')`;
}

/** SQL that reads a timestamptz column as exact microseconds since the epoch (as text). */
export function microsOfSql(column: string): string {
  return `(extract(epoch from ${column}) * 1000000)::bigint::text`;
}
