import type { ExpressionScope } from './mql-scope.ts';
import { jsonbExpr, quoteText, type SqlExpr, textArrayLiteral, toJsonb, typedExpr } from './mql-sql.ts';

/**
 * The document stream between two stages, as one CTE: the top-level fields the compiler knows (each a
 * column with a SQL type, in document order), optionally a jsonb column with further fields, and the
 * order established by an earlier `$sort` (hidden key columns, carried along until `$group`).
 */

export interface FieldColumn {
  name: string;
  column: string;
  expr: SqlExpr;
}

export interface OrderColumn {
  column: string;
  descending: boolean;
}

export interface PipelineState {
  relation: string;
  fields: FieldColumn[];
  rest: string | null;
  order: OrderColumn[];
}

/** Where a stage gets its values: column references of the previous CTE. */
export function stateScope(state: PipelineState, where: string): ExpressionScope {
  return {
    where,
    field(name) {
      const known = state.fields.find((field) => field.name === name);
      if (known) return known.expr;
      if (state.rest) return jsonbExpr(`(${state.relation}.${state.rest} -> ${quoteText(name)})`);
      return jsonbExpr('NULL::jsonb');
    },
    root: () => jsonbExpr(documentSql(state)),
  };
}

/** The whole document (known fields override the rest; missing fields left out). */
export function documentSql(state: PipelineState, returning: 'jsonb' | 'json' = 'jsonb'): string {
  if (!state.rest) return knownObject(state.fields, returning);
  const rest = `COALESCE(${state.relation}.${state.rest}, '{}'::jsonb)`;
  if (state.fields.length === 0) return rest;
  const without = `(${rest} - ${textArrayLiteral(state.fields.map((field) => field.name))})`;
  return `(${without} || ${knownObject(state.fields, 'jsonb')})`;
}

function knownObject(fields: readonly FieldColumn[], returning: 'jsonb' | 'json'): string {
  if (fields.length === 0) return `'{}'::${returning}`;
  const pairs = fields.map((field) => `${quoteText(field.name)} : ${toJsonb(field.expr)}`);
  return `json_object(${pairs.join(', ')} ABSENT ON NULL RETURNING ${returning})`;
}

export interface StageOutput {
  fields: { name: string; expr: SqlExpr }[];
  rest?: string | null;
  /** Replaces the previous relation as FROM item (it must keep its name and columns). */
  from?: string;
  /** Extra FROM items after the previous relation (e.g. a LATERAL join). */
  join?: string;
  where?: string;
  groupBy?: string[];
  having?: string;
  /** New order (replaces the carried one); `undefined` keeps the previous order columns. */
  order?: { sql: string; descending: boolean }[] | 'none';
  /** Apply the (current) order inside this stage, e.g. before LIMIT. */
  applyOrder?: boolean;
  limit?: number;
  offset?: number;
}

/** Accumulates the CTE chain of one statement. */
export class PipelineBuilder {
  readonly ctes: string[] = [];
  private aliasCounter = 0;

  nextAlias(): string {
    this.aliasCounter += 1;
    return `q${this.aliasCounter}`;
  }

  /** Emits `sN AS (SELECT …)` for a stage and returns the state after it. */
  emit(input: PipelineState, output: StageOutput): PipelineState {
    const name = `s${this.ctes.length}`;
    const columns: string[] = [];
    const fields: FieldColumn[] = output.fields.map((field, index) => {
      const column = `f${index}`;
      columns.push(`${field.expr.sql} AS ${column}`);
      const expr: SqlExpr =
        field.expr.type === 'jsonb'
          ? jsonbExpr(`${name}.${column}`)
          : typedExpr(`${name}.${column}`, field.expr.type, field.expr.nullIsMissing);
      return { name: field.name, column, expr };
    });
    let rest: string | null = null;
    if (output.rest) {
      columns.push(`${output.rest} AS rest`);
      rest = 'rest';
    }
    let order: OrderColumn[];
    if (output.order === 'none') {
      order = [];
    } else if (output.order) {
      order = output.order.map((key, index) => {
        columns.push(`${key.sql} AS o${index}`);
        return { column: `o${index}`, descending: key.descending };
      });
    } else {
      order = input.order.map((key, index) => {
        columns.push(`${input.relation}.${key.column} AS o${index}`);
        return { column: `o${index}`, descending: key.descending };
      });
    }
    const orderSource =
      output.order && output.order !== 'none'
        ? output.order.map((k) => ({ sql: k.sql, descending: k.descending }))
        : input.order.map((k) => ({ sql: `${input.relation}.${k.column}`, descending: k.descending }));
    let sql = `SELECT ${columns.length ? columns.join(', ') : 'NULL AS nothing'} FROM ${output.from ?? input.relation}`;
    if (output.join) sql += ` ${output.join}`;
    if (output.where && output.where !== 'true') sql += ` WHERE ${output.where}`;
    if (output.groupBy) sql += ` GROUP BY ${output.groupBy.length ? output.groupBy.join(', ') : '()'}`;
    if (output.having) sql += ` HAVING ${output.having}`;
    if (output.applyOrder && orderSource.length) sql += ` ORDER BY ${orderBySql(orderSource)}`;
    if (output.limit !== undefined) sql += ` LIMIT ${output.limit}`;
    if (output.offset !== undefined) sql += ` OFFSET ${output.offset}`;
    this.ctes.push(`${name} AS (${sql})`);
    return { relation: name, fields, rest, order };
  }
}

export function orderBySql(keys: readonly { sql: string; descending: boolean }[]): string {
  return keys
    .map((key) => (key.descending ? `${key.sql} DESC NULLS LAST` : `${key.sql} ASC NULLS FIRST`))
    .join(', ');
}

/** The current order as ORDER BY keys over the state's relation. */
export function stateOrder(state: PipelineState): { sql: string; descending: boolean }[] {
  return state.order.map((key) => ({ sql: `${state.relation}.${key.column}`, descending: key.descending }));
}

/** Passes every field of the state through unchanged (for stages that only filter or reorder). */
export function passThrough(state: PipelineState): { fields: StageOutput['fields']; rest: string | null } {
  return {
    fields: state.fields.map((field) => ({ name: field.name, expr: field.expr })),
    rest: state.rest ? `${state.relation}.${state.rest}` : null,
  };
}
