import { invalidArgument } from '../../errors.ts';
import { compileBucket, compileCount, compileGroup, compileSortByCount } from './mql-group-stages.ts';
import { compileMatch, type MatchScope } from './mql-match.ts';
import {
  documentSql,
  orderBySql,
  PipelineBuilder,
  type PipelineState,
  passThrough,
  stateOrder,
  stateScope,
} from './mql-pipeline-state.ts';
import { compileAddFields, compileProject, compileReplaceRoot, compileUnset } from './mql-reshape-stages.ts';
import { descend, pathSteps } from './mql-scope.ts';
import {
  jsonbExpr,
  jsonbLiteral,
  quoteIdentifier,
  type SqlType,
  sortKeys,
  textArrayLiteral,
  toJsonb,
  typedExpr,
} from './mql-sql.ts';
import { isPlainObject, type MqlStage, stageLabel } from './mql-values.ts';

/**
 * An aggregation pipeline → ONE SQL statement (a chain of CTEs, which PostgreSQL inlines into a single
 * plan) over a source relation, returning one json column `doc` per result document in the compiler's
 * tagged form (bson/bson-from-json.ts turns `$date`/`$oid` back into BSON types).
 *
 * The source is a relation the caller's role can read — for user queries the per-organization view
 * `sensordata.readings` (migration 0006), so the organization scope applies before the first stage and
 * does not depend on the pipeline. Other sources (hot storage, pipeline sinks) plug in with their own
 * relation and columns.
 */

export interface MqlSourceField {
  /** Top-level document field name. */
  name: string;
  /** SQL expression over the relation's alias `src` (e.g. `src.component_name`). */
  sql: string;
  type: SqlType;
  /**
   * SQL over `src` equal to this field whenever the field is not null — for `time_requested`, the partition
   * key `captured_at`. A leading `$match` comparing the field with a date bounds this column the same way.
   */
  rangeColumn?: string;
}

export interface MqlSource {
  /** FROM item, e.g. `sensordata.readings`; it is aliased `src`. */
  relation: string;
  fields: readonly MqlSourceField[];
  /** A jsonb column (over `src`) holding further top-level fields, for sources of free-form documents. */
  restSql?: string;
  /** Extra condition on the source rows (defense in depth; isolation comes from the relation itself). */
  where?: string;
  /**
   * Pre-aggregates for a leading `$match`+`$group` (the reading rollups, rollups/rollup-union.ts): emits
   * the prefix and returns the state after it, or undefined when the prefix is not one it answers.
   */
  rollupPrefix?: (
    stages: readonly MqlStage[],
    builder: PipelineBuilder,
  ) => { state: PipelineState; consumed: number } | undefined;
}

export interface CompiledPipeline {
  sql: string;
}

/** Stages that write, read other collections or run code: never compiled, whatever the input. */
export const refusedStages = new Set([
  '$out',
  '$merge',
  '$lookup',
  '$graphLookup',
  '$unionWith',
  '$function',
  '$where',
  '$accumulator',
  '$currentOp',
  '$collStats',
  '$indexStats',
  '$listSessions',
  '$listLocalSessions',
  '$planCacheStats',
  '$documents',
  '$changeStream',
  '$sql',
]);

type StageCompiler = (stage: MqlStage, input: PipelineState, builder: PipelineBuilder) => PipelineState;

const stageCompilers: Record<string, StageCompiler> = {
  $match: compileMatchStage,
  $project: compileProject,
  $addFields: compileAddFields,
  $set: compileAddFields,
  $unset: compileUnset,
  $group: compileGroup,
  $sort: compileSort,
  $limit: compileLimitOrSkip,
  $skip: compileLimitOrSkip,
  $count: compileCount,
  $unwind: compileUnwind,
  $sortByCount: compileSortByCount,
  $replaceRoot: compileReplaceRoot,
  $replaceWith: compileReplaceRoot,
  $bucket: compileBucket,
};

function where(stage: MqlStage): string {
  return stageLabel(stage);
}

/** Refuses forbidden and unknown stages (before anything is compiled). */
export function checkStages(stages: readonly MqlStage[]): void {
  for (const stage of stages) {
    if (refusedStages.has(stage.name))
      throw invalidArgument(where(stage), `stage ${stage.name} is not allowed`);
    if (!stageCompilers[stage.name]) throw invalidArgument(where(stage), `unsupported stage ${stage.name}`);
  }
}

export function compilePipeline(stages: readonly MqlStage[], source: MqlSource): CompiledPipeline {
  checkStages(stages);
  const builder = new PipelineBuilder();
  const prefix =
    (!source.where && source.rollupPrefix?.(stages, builder)) || compileSourceScan(stages, source, builder);
  let state = prefix.state;
  for (const stage of stages.slice(prefix.consumed)) {
    state = (stageCompilers[stage.name] as StageCompiler)(stage, state, builder);
  }
  const order = stateOrder(state);
  const orderBy = order.length ? ` ORDER BY ${orderBySql(order)}` : '';
  const sql = `WITH ${builder.ctes.join(',\n')}\nSELECT ${documentSql(state, 'json')} AS doc FROM ${state.relation}${orderBy}`;
  return { sql };
}

/** The source relation with the leading `$match` stages applied to its rows; `consumed`: those stages. */
function compileSourceScan(
  stages: readonly MqlStage[],
  source: MqlSource,
  builder: PipelineBuilder,
): { state: PipelineState; consumed: number } {
  const fields = source.fields.map((field) => ({
    name: field.name,
    expr: {
      ...(field.type === 'jsonb' ? jsonbExpr(field.sql) : typedExpr(field.sql, field.type)),
      ...(field.rangeColumn ? { rangeSql: field.rangeColumn } : {}),
    },
  }));
  const from: PipelineState = { relation: `${source.relation} AS src`, fields: [], rest: null, order: [] };
  const conditions = source.where ? [source.where] : [];
  let first = 0;
  if (!source.restSql && source.fields.some((field) => field.rangeColumn)) {
    // Leading $match stages filter the source rows themselves: only there can a condition name a range
    // column (which is no document field). Same condition, same rows, one CTE fewer.
    const direct: PipelineState = {
      relation: 'src',
      fields: fields.map((field) => ({ ...field, column: '' })),
      rest: null,
      order: [],
    };
    for (; stages[first]?.name === '$match'; first++) {
      const stage = stages[first] as MqlStage;
      conditions.push(compileMatch(stage.spec, matchScope(direct, builder, stage)));
    }
  }
  const filters = conditions.filter((condition) => condition !== 'true').map((condition) => `(${condition})`);
  const state = builder.emit(from, {
    fields,
    rest: source.restSql ?? null,
    ...(filters.length ? { where: filters.join(' AND ') } : {}),
  });
  return { state, consumed: first };
}

function matchScope(input: PipelineState, builder: PipelineBuilder, stage: MqlStage): MatchScope {
  return { ...stateScope(input, where(stage)), nextAlias: () => builder.nextAlias() };
}

function compileMatchStage(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const condition = compileMatch(stage.spec, matchScope(input, builder, stage));
  return builder.emit(input, { ...passThrough(input), where: condition });
}

function compileSort(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const at = where(stage);
  if (!isPlainObject(stage.spec) || Object.keys(stage.spec).length === 0) {
    throw invalidArgument(at, 'needs a document of fields with 1 or -1');
  }
  const scope = stateScope(input, at);
  const order: { sql: string; descending: boolean }[] = [];
  for (const [path, direction] of Object.entries(stage.spec)) {
    if (direction !== 1 && direction !== -1) {
      throw invalidArgument(at, `sort direction for ${path} must be 1 or -1`, JSON.stringify(direction));
    }
    const [head, ...rest] = pathSteps(path, at);
    const value = descend(scope.field(head as string), rest);
    for (const key of sortKeys(value, direction === -1))
      order.push({ sql: key, descending: direction === -1 });
  }
  return builder.emit(input, { ...passThrough(input), order });
}

function compileLimitOrSkip(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const count = stage.spec;
  const minimum = stage.name === '$limit' ? 1 : 0;
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < minimum) {
    throw invalidArgument(where(stage), `needs an integer of at least ${minimum}`, String(count));
  }
  return builder.emit(input, {
    ...passThrough(input),
    applyOrder: true,
    ...(stage.name === '$limit' ? { limit: count } : { offset: count }),
  });
}

function compileUnwind(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const at = where(stage);
  const spec = typeof stage.spec === 'string' ? { path: stage.spec } : stage.spec;
  if (!isPlainObject(spec) || typeof spec.path !== 'string' || !spec.path.startsWith('$')) {
    throw invalidArgument(
      at,
      'needs a field path such as "$data.detections" or {path, includeArrayIndex?, preserveNullAndEmptyArrays?}',
    );
  }
  const preserve = spec.preserveNullAndEmptyArrays === true;
  const indexField = spec.includeArrayIndex;
  if (
    indexField !== undefined &&
    (typeof indexField !== 'string' ||
      indexField === '' ||
      indexField.startsWith('$') ||
      indexField.includes('.'))
  ) {
    throw invalidArgument(at, 'includeArrayIndex must be a field name without . or a leading $');
  }
  const [head, ...rest] = pathSteps(spec.path.slice(1), at);
  const scope = stateScope(input, at);
  const root = scope.field(head as string);
  const value = toJsonb(descend(root, rest));
  const alias = builder.nextAlias();
  const array = `CASE WHEN jsonb_typeof(${value}) = 'array' THEN ${value} WHEN ${value} IS NULL OR ${value} = 'null'::jsonb THEN '[]'::jsonb ELSE jsonb_build_array(${value}) END`;
  // Below the top level, each output document is the field with the array replaced by one element. The
  // field with null in the array's place is built once per input document (the OFFSET 0 subquery, which the
  // element scan depends on, runs once per input row) so that each element costs its own size plus the
  // rest of the field — not the whole array again (quadratic in the array's length). Setting the path again
  // gives the same value as setting it on the original field: `mql_set` only replaces the last step.
  const elements =
    rest.length === 0
      ? `SELECT e.v, e.i FROM jsonb_array_elements(${array}) WITH ORDINALITY AS e(v, i)`
      : `SELECT e.v, e.i, b.base FROM (SELECT mql_set(${toJsonb(root)}, ${textArrayLiteral(rest)}, 'null'::jsonb) AS base, ${array} AS elements OFFSET 0) AS b CROSS JOIN LATERAL jsonb_array_elements(b.elements) WITH ORDINALITY AS e(v, i)`;
  const columns = rest.length === 0 ? '(v, i)' : '(v, i, base)';
  const join = preserve
    ? `LEFT JOIN LATERAL (${elements}) AS ${alias}${columns} ON true`
    : `CROSS JOIN LATERAL (${elements}) AS ${alias}${columns}`;
  // With preserveNullAndEmptyArrays, a missing/null field stays as it was and an empty array disappears.
  const unwound = preserve
    ? `CASE WHEN ${alias}.i IS NOT NULL THEN ${alias}.v WHEN jsonb_typeof(${value}) = 'array' THEN NULL ELSE ${value} END`
    : `${alias}.v`;
  const { fields, rest: restColumn } = passThrough(input);
  const replaced =
    rest.length === 0
      ? jsonbExpr(unwound)
      : jsonbExpr(
          `CASE WHEN ${alias}.i IS NOT NULL THEN mql_set(${alias}.base, ${textArrayLiteral(rest)}, ${alias}.v) WHEN jsonb_typeof(${value}) = 'array' THEN mql_prune(${toJsonb(root)}, ${jsonbLiteral(pruneTree(rest))}, false) ELSE ${toJsonb(root)} END`,
        );
  const output = fields.filter((field) => field.name !== head);
  const position = fields.findIndex((field) => field.name === head);
  output.splice(position >= 0 ? position : output.length, 0, { name: head as string, expr: replaced });
  if (typeof indexField === 'string') {
    const index = jsonbExpr(`COALESCE(to_jsonb(${alias}.i - 1), 'null'::jsonb)`);
    const existing = output.findIndex((field) => field.name === indexField);
    if (existing >= 0) output[existing] = { name: indexField, expr: index };
    else output.push({ name: indexField, expr: index });
  }
  const order = input.order.length
    ? [...stateOrder(input), { sql: `${alias}.i`, descending: false }]
    : undefined;
  return builder.emit(input, { fields: output, rest: restColumn, join, ...(order ? { order } : {}) });
}

/** `['a', 'b']` → `{"a": {"b": true}}`, the spec `mql_prune` takes. */
function pruneTree(steps: readonly string[]): Record<string, unknown> {
  return steps.reduceRight<Record<string, unknown>>(
    (inner, step, index) => ({ [step]: index === steps.length - 1 ? true : inner }),
    {},
  );
}

/**
 * The documents of migration 0006 (wire-protocol §3.2 fields), for STANDARD queries. The default relation is
 * `sensordata.pipeline_readings` (0016): the same documents plus `captured_at`, which is no document field
 * but bounds `time_requested` conditions (partition pruning, index). `capturedAt` null: the relation has no
 * such column.
 */
export function readingsSource(
  relation = 'sensordata.pipeline_readings',
  capturedAt: string | null = 'captured_at',
): MqlSource {
  const column = (name: string) => `src.${quoteIdentifier(name)}`;
  return {
    relation,
    fields: [
      { name: '_id', sql: column('_id'), type: 'oid' },
      { name: 'organization_id', sql: column('organization_id'), type: 'text' },
      { name: 'location_id', sql: column('location_id'), type: 'text' },
      { name: 'robot_id', sql: column('robot_id'), type: 'text' },
      { name: 'part_id', sql: column('part_id'), type: 'text' },
      { name: 'component_type', sql: column('component_type'), type: 'text' },
      { name: 'component_name', sql: column('component_name'), type: 'text' },
      { name: 'method_name', sql: column('method_name'), type: 'text' },
      {
        name: 'time_requested',
        sql: column('time_requested'),
        type: 'date',
        ...(capturedAt ? { rangeColumn: column(capturedAt) } : {}),
      },
      { name: 'time_received', sql: column('time_received'), type: 'date' },
      { name: 'tags', sql: `to_jsonb(${column('tags')})`, type: 'jsonb' },
      { name: 'additional_parameters', sql: column('additional_parameters'), type: 'jsonb' },
      { name: 'data', sql: column('data'), type: 'jsonb' },
    ],
  };
}
