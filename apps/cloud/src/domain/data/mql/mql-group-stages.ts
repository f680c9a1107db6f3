import { invalidArgument } from '../../errors.ts';
import { compareValues, compileExpression } from './mql-expressions.ts';
import {
  orderBySql,
  type PipelineBuilder,
  type PipelineState,
  type StageOutput,
  stateOrder,
  stateScope,
} from './mql-pipeline-state.ts';
import type { ExpressionScope } from './mql-scope.ts';
import {
  jsonbExpr,
  quoteText,
  type SqlExpr,
  sqlAnd,
  toFloat,
  toJsonb,
  toNumber,
  typedExpr,
} from './mql-sql.ts';
import { isPlainObject, type MqlStage, type MqlValue, stageLabel } from './mql-values.ts';

/**
 * $group, $count, $sortByCount and $bucket → GROUP BY. Accumulators use native aggregates where the value
 * type allows ($sum/$avg over numbers, $min/$max over text or dates), BSON order otherwise; $first/$last/
 * $push follow the order of an earlier $sort. A group key of null or a constant makes one group (and none
 * for an empty input, like MongoDB).
 */

function where(stage: MqlStage): string {
  return stageLabel(stage);
}

/** A key value as a non-NULL SQL value to group by (missing groups with null). */
export function groupKey(expr: SqlExpr): SqlExpr {
  if (expr.type === 'jsonb' || expr.nullIsMissing)
    return jsonbExpr(`COALESCE(${toJsonb(expr)}, 'null'::jsonb)`);
  return expr;
}

export function isConstantKey(value: MqlValue): boolean {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return true;
  return typeof value === 'string' && !value.startsWith('$');
}

/**
 * Accumulator arguments computed once per row: the previous relation is wrapped as
 * `(SELECT s1.f6, <argument> AS h0 … FROM s1 OFFSET 0) AS s1` (OFFSET 0 keeps PostgreSQL from folding the
 * expressions back into every use), so an expensive argument used by several accumulators is computed once;
 * the wrapper selects only the columns the stage references, so the source's other columns (e.g. the
 * view's `_id`) are never computed. PostgreSQL does not run a GROUP BY over such a subquery with parallel
 * workers, so cheap arguments — a column, a field path through objects (`SqlExpr.cheap`) — are not hoisted:
 * evaluating `data -> 'readings' -> 'x'` twice costs less than giving up the parallel plan (and a number there
 * is read in one walk: `toNumber`/`toFloat` use JSON_VALUE on `SqlExpr.objectPath`).
 */
interface ArgumentHoist {
  hoist(expr: SqlExpr): SqlExpr;
  /** The FROM item, given every SQL fragment of the stage that reads the previous relation. */
  from(input: PipelineState, stageSql: readonly string[]): string | undefined;
}

function createArgumentHoist(relation: string): ArgumentHoist {
  const items: string[] = [];
  const names = new Map<string, string>();
  return {
    hoist(expr) {
      if (expr.type !== 'jsonb' || expr.cheap || /^\w+\.\w+$/.test(expr.sql)) return expr;
      let name = names.get(expr.sql);
      if (!name) {
        name = `h${items.length}`;
        names.set(expr.sql, name);
        items.push(`${expr.sql} AS ${name}`);
      }
      return jsonbExpr(`${relation}.${name}`);
    },
    from(input, stageSql) {
      if (!items.length) return undefined;
      // Columns of the previous relation the stage refers to (a string literal that happens to look like a
      // reference only adds an existing column).
      const columns = new Set([
        ...input.fields.map((field) => field.column),
        ...input.order.map((key) => key.column),
        ...(input.rest ? [input.rest] : []),
      ]);
      const used = new Set<string>();
      const reference = new RegExp(`\\b${relation}\\.(\\w+)\\b`, 'g');
      for (const sql of stageSql) {
        for (const match of sql.matchAll(reference)) {
          if (columns.has(match[1] as string)) used.add(`${relation}.${match[1]}`);
        }
      }
      return `(SELECT ${[...used, ...items].join(', ')} FROM ${relation} OFFSET 0) AS ${relation}`;
    },
  };
}

function compileAccumulator(
  name: string,
  spec: MqlValue,
  scope: ExpressionScope,
  input: PipelineState,
  hoisted: ArgumentHoist,
): SqlExpr {
  if (!isPlainObject(spec) || Object.keys(spec).length !== 1) {
    throw invalidArgument(
      scope.where,
      `accumulator for ${name} must be a document with one operator such as {$sum: 1}`,
    );
  }
  const [operator, argument] = Object.entries(spec)[0] as [string, MqlValue];
  const order = stateOrder(input);
  const orderClause = order.length ? ` ORDER BY ${orderBySql(order)}` : '';
  const reversed = order.length
    ? ` ORDER BY ${orderBySql(order.map((key) => ({ ...key, descending: !key.descending })))}`
    : '';
  const value = () => hoisted.hoist(compileExpression(argument, scope));
  switch (operator) {
    case '$sum': {
      if (typeof argument === 'number') return typedExpr(`(count(*) * ${argument}::numeric)`, 'number');
      return typedExpr(`COALESCE(sum(${toNumber(value())}), 0)`, 'number');
    }
    case '$avg':
      return typedExpr(`avg(${toFloat(value())})`, 'number');
    case '$stdDevPop':
      return typedExpr(`stddev_pop(${toFloat(value())})`, 'number');
    case '$stdDevSamp':
      return typedExpr(`stddev_samp(${toFloat(value())})`, 'number');
    case '$min':
    case '$max':
      return minMax(operator, value());
    case '$first':
      return jsonbExpr(`COALESCE((array_agg(${toJsonb(value())}${orderClause}))[1], 'null'::jsonb)`);
    case '$last': {
      const json = toJsonb(value());
      const last = order.length ? `(array_agg(${json}${reversed}))[1]` : `(array_agg(${json}))[count(*)]`;
      return jsonbExpr(`COALESCE(${last}, 'null'::jsonb)`);
    }
    case '$push': {
      const json = toJsonb(value());
      return jsonbExpr(
        `COALESCE(jsonb_agg(${json}${orderClause}) FILTER (WHERE ${json} IS NOT NULL), '[]'::jsonb)`,
      );
    }
    case '$addToSet': {
      const json = toJsonb(value());
      return jsonbExpr(
        `COALESCE(jsonb_agg(DISTINCT ${json}) FILTER (WHERE ${json} IS NOT NULL), '[]'::jsonb)`,
      );
    }
    case '$count':
      if (!isPlainObject(argument) || Object.keys(argument).length)
        throw invalidArgument(scope.where, '$count accumulator takes {}');
      return typedExpr('count(*)', 'number');
    default:
      throw invalidArgument(scope.where, `unsupported accumulator ${operator}`);
  }
}

/** $min/$max: null and missing ignored; numbers natively, other types through a text key in BSON order. */
export function minMax(operator: '$min' | '$max', value: SqlExpr): SqlExpr {
  const fn = operator === '$min' ? 'min' : 'max';
  if (value.type === 'text' || value.type === 'oid')
    return typedExpr(`${fn}((${value.sql}) COLLATE "C")`, value.type);
  if (value.type === 'date' || value.type === 'number') return typedExpr(`${fn}(${value.sql})`, value.type);
  const json = toJsonb(value);
  const numeric = `to_jsonb(${fn}(${toNumber(value)}))`;
  const other = `mql_minmax_value(${fn}(mql_minmax_key(${json}) COLLATE "C"))`;
  // Numbers sort before every other non-null type.
  const ordered = operator === '$min' ? [numeric, other] : [other, numeric];
  return jsonbExpr(`COALESCE(${ordered.join(', ')}, 'null'::jsonb)`);
}

function accumulatorFields(
  spec: { [key: string]: MqlValue },
  scope: ExpressionScope,
  input: PipelineState,
  skip: string,
  hoisted: ArgumentHoist,
): StageOutput['fields'] {
  return Object.entries(spec)
    .filter(([name]) => name !== skip)
    .map(([name, accumulator]) => {
      if (name.includes('.') || name.startsWith('$')) {
        throw invalidArgument(scope.where, 'an output field name must not contain . or start with $', name);
      }
      return { name, expr: compileAccumulator(name, accumulator, scope, input, hoisted) };
    });
}

export function compileGroup(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const at = where(stage);
  if (!isPlainObject(stage.spec) || !('_id' in stage.spec))
    throw invalidArgument(at, 'needs an _id (use null for one group)');
  const scope = stateScope(input, at);
  const idSpec = stage.spec._id as MqlValue;
  const hoisted = createArgumentHoist(input.relation);
  const accumulators = accumulatorFields(stage.spec, scope, input, '_id', hoisted);
  const usedSql = accumulators.map((field) => field.expr.sql);
  if (isConstantKey(idSpec)) {
    const id = compileExpression(idSpec, scope);
    const from = hoisted.from(input, [id.sql, ...usedSql]);
    return builder.emit(input, {
      ...(from ? { from } : {}),
      fields: [{ name: '_id', expr: id }, ...accumulators],
      groupBy: [],
      having: 'count(*) > 0',
      order: 'none',
    });
  }
  const key = groupKey(compileExpression(idSpec, scope));
  const from = hoisted.from(input, [key.sql, ...usedSql]);
  return builder.emit(input, {
    ...(from ? { from } : {}),
    fields: [{ name: '_id', expr: key }, ...accumulators],
    groupBy: [key.sql],
    order: 'none',
  });
}

export function compileSortByCount(
  stage: MqlStage,
  input: PipelineState,
  builder: PipelineBuilder,
): PipelineState {
  const at = where(stage);
  const scope = stateScope(input, at);
  if (!(typeof stage.spec === 'string' && stage.spec.startsWith('$')) && !isPlainObject(stage.spec)) {
    throw invalidArgument(at, 'needs a field path such as "$component_name" or an expression document');
  }
  const key = groupKey(compileExpression(stage.spec, scope));
  return builder.emit(input, {
    fields: [
      { name: '_id', expr: key },
      { name: 'count', expr: typedExpr('count(*)', 'number') },
    ],
    groupBy: [key.sql],
    order: [{ sql: 'count(*)', descending: true }],
  });
}

export function compileCount(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const name = stage.spec;
  if (typeof name !== 'string' || name === '' || name.startsWith('$') || name.includes('.')) {
    throw invalidArgument(where(stage), 'needs a field name without . or a leading $', String(name));
  }
  return builder.emit(input, {
    fields: [{ name, expr: typedExpr('count(*)', 'number') }],
    groupBy: [],
    having: 'count(*) > 0',
    order: 'none',
  });
}

export function compileBucket(
  stage: MqlStage,
  input: PipelineState,
  builder: PipelineBuilder,
): PipelineState {
  const at = where(stage);
  const spec = stage.spec;
  if (
    !isPlainObject(spec) ||
    !('groupBy' in spec) ||
    !Array.isArray(spec.boundaries) ||
    spec.boundaries.length < 2
  ) {
    throw invalidArgument(
      at,
      'needs {groupBy, boundaries: [at least two ascending values], default?, output?}',
    );
  }
  const scope = stateScope(input, at);
  const value = compileExpression(spec.groupBy as MqlValue, scope);
  const bounds = spec.boundaries.map((bound) => compileExpression(bound, scope));
  const whens: string[] = [];
  const indexes: string[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const lower = bounds[i] as SqlExpr;
    const upper = bounds[i + 1] as SqlExpr;
    const inside = sqlAnd([compareValues(value, lower, '>='), compareValues(value, upper, '<')]);
    whens.push(`WHEN ${inside} THEN ${toJsonb(lower)}`);
    indexes.push(`WHEN ${inside} THEN ${i}`);
  }
  const fallback =
    'default' in spec
      ? toJsonb(compileExpression(spec.default as MqlValue, scope))
      : `mql_fail(${quoteText(`${at}: a value falls outside the boundaries and there is no default`)})`;
  const id = jsonbExpr(`CASE ${whens.join(' ')} ELSE ${fallback} END`);
  const output = spec.output ?? { count: { $sum: 1 } };
  if (!isPlainObject(output)) throw invalidArgument(at, 'output must be a document of accumulators');
  const hoisted = createArgumentHoist(input.relation);
  const accumulators = accumulatorFields(output, scope, input, '', hoisted);
  const order = `min(CASE ${indexes.join(' ')} ELSE ${bounds.length} END)`;
  const from = hoisted.from(input, [id.sql, order, ...accumulators.map((field) => field.expr.sql)]);
  return builder.emit(input, {
    ...(from ? { from } : {}),
    fields: [{ name: '_id', expr: id }, ...accumulators],
    groupBy: [id.sql],
    order: [{ sql: order, descending: false }],
  });
}
