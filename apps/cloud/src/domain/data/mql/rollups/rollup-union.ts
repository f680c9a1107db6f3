import { compileExpression } from '../mql-expressions.ts';
import { groupKey, isConstantKey, minMax } from '../mql-group-stages.ts';
import { compileMatch } from '../mql-match.ts';
import type { PipelineBuilder, PipelineState, StageOutput } from '../mql-pipeline-state.ts';
import { stateScope } from '../mql-pipeline-state.ts';
import { descend } from '../mql-scope.ts';
import { jsonbExpr, quoteText, type SqlExpr, sqlAnd, toNumber, typedExpr } from '../mql-sql.ts';
import { type MqlStage, stageLabel } from '../mql-values.ts';
import { type RollupPlan, type RollupTimeBound, rollupPlanOf, rollupSourceFields } from './rollup-plan.ts';

/**
 * A rollup plan (rollup-plan.ts) → CTEs over the per-organization views of migration 0023, in the same
 * statement as the rest of the pipeline (one snapshot):
 *
 *   ru_src     the caller's capture sources that pass the source-level `$match`
 *   ru_dirty   marked buckets in the time range (their rollups may be stale)
 *   ru_buckets materialized buckets in the range without a mark, with the statistics of every path the
 *              accumulators read, and `usable`: false where a `$min`/`$max` path meets a non-number (or an
 *              array on the way) in the bucket, or the bucket keeps no path rows
 *   ru_raw     the raw rows of the dirty and the unusable buckets (per bucket: readings_source_time)
 *   ru_union   one row per usable bucket (weight = its row count, partial sums, numeric min/max) and one
 *              per raw row (weight 1, its values), with the source-level fields
 *
 * and the `$group` itself over ru_union: counts add weights, sums add partial sums, `$avg` divides the sum
 * by the count of numbers, `$min`/`$max` combine the partial values with the raw compiler's own BSON-order
 * comparison. Every later stage compiles as usual on the group's output.
 */

const hourInterval = `interval '1 hour'`;
const keyColumns = ['source_id', 'captured_hour', 'received_hour', 'requested_hour'];

/**
 * `(key) IN (SELECT key FROM cte)` as an expression (COALESCE keeps PostgreSQL from turning it into a
 * join): a hashed SubPlan, one hash probe per row. As a semi/anti join the planner, estimating a CTE of a
 * row or two, chose a nested loop: 500,000 raw rows × 5,760 dirty buckets took seconds.
 */
function inKeys(key: readonly string[], cte: string): string {
  return `COALESCE((${key.join(', ')}) IN (SELECT ${keyColumns.join(', ')} FROM ${cte}), false)`;
}

function binHour(column: string): string {
  return `date_bin('1 hour', ${column}, timestamptz '2000-01-01 00:00:00+00')`;
}

function timestampLiteral(at: Date): string {
  return `${quoteText(at.toISOString())}::timestamptz`;
}

/** Bucket-level bounds: whole hours, and a bounded time must exist (missing is the hour 'infinity'). */
function bucketBounds(alias: string, bounds: readonly RollupTimeBound[]): string[] {
  const conditions = bounds.map(
    (bound) => `${alias}.${bound.field} ${bound.op} ${timestampLiteral(bound.at)}`,
  );
  for (const field of new Set(bounds.map((bound) => bound.field))) {
    conditions.push(`${alias}.${field} < 'infinity'::timestamptz`);
  }
  return conditions;
}

const rowTimeColumns = { received_hour: 'time_received', requested_hour: 'time_requested' } as const;

interface PathSlot {
  steps: string[];
  /** JSON array text of the steps: its key in reading_rollup_buckets.paths. */
  key: string;
  numbers: boolean;
  min: boolean;
  max: boolean;
  index: number;
}

function pathSlots(plan: RollupPlan): Map<string, PathSlot> {
  const slots = new Map<string, PathSlot>();
  for (const accumulator of plan.accumulators) {
    if (!('steps' in accumulator)) continue;
    const key = JSON.stringify(accumulator.steps);
    let slot = slots.get(key);
    if (!slot) {
      slot = { steps: accumulator.steps, key, numbers: false, min: false, max: false, index: slots.size };
      slots.set(key, slot);
    }
    if (accumulator.kind === 'sum' || accumulator.kind === 'avg') slot.numbers = true;
    else slot[accumulator.kind] = true;
  }
  return slots;
}

/** Prefixes of the steps (including the whole path) as path keys. */
function prefixKeys(steps: readonly string[]): string[] {
  return steps.map((_, index) => JSON.stringify(steps.slice(0, index + 1)));
}

function sourcesCte(plan: RollupPlan, builder: PipelineBuilder, where: string): string {
  const columns = rollupSourceFields.map((field, index) => `${field.sql} AS c${index}`);
  const scope = {
    where,
    field(name: string): SqlExpr {
      const field = rollupSourceFields.find((candidate) => candidate.name === name);
      if (!field) return jsonbExpr('NULL::jsonb');
      return field.type === 'jsonb' ? jsonbExpr(field.sql) : typedExpr(field.sql, 'text');
    },
    root: () =>
      jsonbExpr(
        `jsonb_build_object(${rollupSourceFields.map((field) => `${quoteText(field.name)}, ${field.sql}`).join(', ')})`,
      ),
    nextAlias: () => builder.nextAlias(),
  };
  const conditions = plan.sourceMatches
    .map((spec) => compileMatch(spec, scope))
    .filter((sql) => sql !== 'true');
  return `SELECT s.source_id, ${columns.join(', ')} FROM sensordata.reading_sources s WHERE ${sqlAnd(conditions)}`;
}

/** Field `index` of a path's statistics in the bucket's `paths` object (migration 0027), as text. */
function stat(key: string, index: number): string {
  return `(b.paths -> ${quoteText(key)} ->> ${index})`;
}

function bucketsCte(plan: RollupPlan, slots: Map<string, PathSlot>): string {
  const columns: string[] = [];
  for (const slot of slots.values()) {
    columns.push(
      `COALESCE(${stat(slot.key, 0)}::bigint, 0) AS n${slot.index}`,
      `${stat(slot.key, 1)}::numeric AS s${slot.index}`,
      `${stat(slot.key, 2)}::numeric AS lo${slot.index}`,
      `${stat(slot.key, 3)}::numeric AS hi${slot.index}`,
    );
  }
  // A bucket without path statistics, or where a $min/$max path meets anything but numbers (or an array on
  // the way to it): read raw.
  const usable = slots.size ? ['b.paths IS NOT NULL'] : ['true'];
  for (const slot of slots.values()) {
    if (!slot.min && !slot.max) continue;
    for (const prefix of prefixKeys(slot.steps)) usable.push(`COALESCE(${stat(prefix, 4)}::bigint, 0) = 0`);
    usable.push(`COALESCE(${stat(slot.key, 5)}::bigint, 0) = 0`);
  }
  const conditions = [
    'b.source_id IN (SELECT source_id FROM ru_src)',
    ...bucketBounds('b', plan.bounds),
    `NOT ${inKeys(
      keyColumns.map((column) => `b.${column}`),
      'ru_dirty',
    )}`,
  ];
  return `SELECT ${keyColumns.map((column) => `b.${column}`).join(', ')}, b.row_count, ${sqlAnd(usable)} AS usable${columns.length ? `, ${columns.join(', ')}` : ''}
    FROM sensordata.reading_rollup_buckets b
   WHERE ${conditions.join(' AND ')}`;
}

/**
 * Raw rows of the dirty and unusable buckets, two ways; a one-time filter on their number runs exactly one:
 * a few buckets → one readings_source_time probe per bucket (OFFSET 0 keeps the LATERAL subquery apart, so
 * the per-bucket conditions reach the security-barrier view as parameters); many (nothing materialized
 * yet) → one scan of the range, as the raw compiled SQL does, keeping rows whose bucket is in the set.
 */
const defaultMaxProbedBuckets = 256;

/**
 * The values the accumulators read from a raw row (`r.data`), computed where the row is read so that only
 * these narrow columns (not the document) flow into the aggregation: `num<i>` the number at the path
 * (NULL for anything else), `val<i>` the value itself for $min/$max.
 */
function rawValues(slots: Map<string, PathSlot>): string {
  const columns = ['k.source_id'];
  for (const slot of slots.values()) {
    const value = descend(jsonbExpr('r.data'), slot.steps);
    if (slot.numbers) columns.push(`${toNumber(value)} AS num${slot.index}`);
    if (slot.min || slot.max) columns.push(`${value.sql} AS val${slot.index}`);
  }
  return columns.join(', ');
}

function rawCte(plan: RollupPlan, maxProbedBuckets: number, slots: Map<string, PathSlot>): string {
  const rowBounds = plan.bounds.map(
    (bound) => `r.${rowTimeColumns[bound.field]} ${bound.op} ${timestampLiteral(bound.at)}`,
  );
  // time_requested equals captured_at (the partition key) whenever it is set: the same bound prunes.
  for (const bound of plan.bounds) {
    if (bound.field === 'requested_hour')
      rowBounds.push(`r.captured_at ${bound.op} ${timestampLiteral(bound.at)}`);
  }
  // The bucket hour of migrations 0023/0031 (date_bin on absolute time: the UTC hour, no zone conversion).
  const hourOf = (column: string) => `COALESCE(${binHour(`r.${column}`)}, 'infinity'::timestamptz)`;
  const probed = `SELECT ${rawValues(slots)} FROM ru_raw_keys k
    CROSS JOIN LATERAL (
      SELECT r.data FROM sensordata.reading_bucket_rows r
       WHERE r.source_id = k.source_id AND r.captured_at >= k.captured_hour
         AND r.captured_at < k.captured_hour + ${hourInterval}
         AND ${hourOf('time_received')} = k.received_hour AND ${hourOf('time_requested')} = k.requested_hour
         ${rowBounds.map((condition) => `AND ${condition}`).join(' ')}
      OFFSET 0) r
   WHERE (SELECT count(*) FROM ru_raw_keys) <= ${maxProbedBuckets}`;
  const scanned = `SELECT ${rawValues(slots).replace('k.source_id', 'r.source_id')} FROM sensordata.reading_bucket_rows r
   WHERE (SELECT count(*) FROM ru_raw_keys) > ${maxProbedBuckets}
     AND r.source_id IN (SELECT source_id FROM ru_src)
     ${rowBounds.map((condition) => `AND ${condition}`).join(' ')}
     AND ${inKeys(['r.source_id', binHour('r.captured_at'), hourOf('time_received'), hourOf('time_requested')], 'ru_raw_keys')}`;
  return `${probed}\n   UNION ALL\n   ${scanned}`;
}

/**
 * Rollup rows and raw rows as partial aggregates of the same shape. The raw rows are aggregated per source
 * first (a hash aggregate of a few groups; min/max partials in the raw compiler's BSON order), so a mostly
 * dirty range does not sort every raw row by the group key.
 */
function unionCte(slots: Map<string, PathSlot>): string {
  const sourceColumns = rollupSourceFields.map((_, index) => `src.c${index}`).join(', ');
  const rolled: string[] = ['b.row_count AS w'];
  const partials: string[] = ['count(*)::bigint AS w'];
  const raw: string[] = ['p.w'];
  for (const slot of slots.values()) {
    const i = slot.index;
    const value = jsonbExpr(`r.val${i}`);
    if (slot.numbers) {
      rolled.push(`b.n${i} AS n${i}`, `b.s${i} AS s${i}`);
      partials.push(`count(r.num${i})::bigint AS n${i}`, `sum(r.num${i}) AS s${i}`);
      raw.push(`p.n${i}`, `p.s${i}`);
    }
    if (slot.min) {
      rolled.push(`to_jsonb(b.lo${i}) AS lo${i}`);
      partials.push(`${minMax('$min', value).sql} AS lo${i}`);
      raw.push(`p.lo${i}`);
    }
    if (slot.max) {
      rolled.push(`to_jsonb(b.hi${i}) AS hi${i}`);
      partials.push(`${minMax('$max', value).sql} AS hi${i}`);
      raw.push(`p.hi${i}`);
    }
  }
  return `SELECT ${sourceColumns}, ${rolled.join(', ')} FROM ru_buckets b JOIN ru_src src ON src.source_id = b.source_id WHERE b.usable
    UNION ALL
    SELECT ${sourceColumns}, ${raw.join(', ')}
      FROM (SELECT r.source_id, ${partials.join(', ')} FROM ru_raw r GROUP BY r.source_id) p
      JOIN ru_src src ON src.source_id = p.source_id`;
}

function groupOutput(plan: RollupPlan, slots: Map<string, PathSlot>, union: PipelineState): StageOutput {
  const scope = stateScope(union, stageLabel(plan.group));
  const column = (name: string) => `${union.relation}.${name}`;
  const accumulators = plan.accumulators.map((accumulator) => {
    const slot =
      'steps' in accumulator ? (slots.get(JSON.stringify(accumulator.steps)) as PathSlot) : undefined;
    let expr: SqlExpr;
    switch (accumulator.kind) {
      case 'count':
        expr = typedExpr(`sum(${column('w')})::bigint`, 'number');
        break;
      case 'sumConstant':
        expr = typedExpr(`(sum(${column('w')}) * ${accumulator.constant}::numeric)`, 'number');
        break;
      case 'sum':
        expr = typedExpr(`COALESCE(sum(${column(`s${slot?.index}`)}), 0)`, 'number');
        break;
      case 'avg':
        expr = typedExpr(
          `(sum(${column(`s${slot?.index}`)}) / NULLIF(sum(${column(`n${slot?.index}`)}), 0))::double precision`,
          'number',
        );
        break;
      case 'min':
        expr = minMax('$min', jsonbExpr(column(`lo${slot?.index}`)));
        break;
      case 'max':
        expr = minMax('$max', jsonbExpr(column(`hi${slot?.index}`)));
        break;
    }
    return { name: accumulator.name, expr };
  });
  if (isConstantKey(plan.groupId)) {
    const id = compileExpression(plan.groupId, scope);
    return {
      fields: [{ name: '_id', expr: id }, ...accumulators],
      groupBy: [],
      having: 'count(*) > 0',
      order: 'none',
    };
  }
  const key = groupKey(compileExpression(plan.groupId, scope));
  return { fields: [{ name: '_id', expr: key }, ...accumulators], groupBy: [key.sql], order: 'none' };
}

/**
 * When the pipeline starts with a prefix the rollups answer, emits it and returns the state after its
 * `$group` and the number of stages consumed; otherwise undefined (and emits nothing). Up to
 * `maxProbedBuckets` raw buckets are read bucket by bucket, more with one scan of the range (default 256).
 */
export function rollupPrefixCompiler(options: { maxProbedBuckets?: number } = {}) {
  const maxProbedBuckets = options.maxProbedBuckets ?? defaultMaxProbedBuckets;
  return (
    stages: readonly MqlStage[],
    builder: PipelineBuilder,
  ): { state: PipelineState; consumed: number } | undefined => compileWith(stages, builder, maxProbedBuckets);
}

export const compileRollupPrefix = rollupPrefixCompiler();

function compileWith(
  stages: readonly MqlStage[],
  builder: PipelineBuilder,
  maxProbedBuckets: number,
): { state: PipelineState; consumed: number } | undefined {
  const plan = rollupPlanOf(stages);
  if (!plan) return undefined;
  const where = stageLabel(plan.group);
  const slots = pathSlots(plan);
  const source = sourcesCte(plan, builder, where);
  builder.ctes.push(
    `ru_src AS (${source})`,
    `ru_dirty AS (SELECT DISTINCT ${keyColumns.map((column) => `m.${column}`).join(', ')}
       FROM sensordata.reading_rollup_marks m
      WHERE ${['m.source_id IN (SELECT source_id FROM ru_src)', ...bucketBounds('m', plan.bounds)].join(' AND ')})`,
    `ru_buckets AS MATERIALIZED (${bucketsCte(plan, slots)})`,
    `ru_raw_keys AS MATERIALIZED (SELECT ${keyColumns.join(', ')} FROM ru_dirty
       UNION ALL SELECT ${keyColumns.join(', ')} FROM ru_buckets WHERE NOT usable)`,
    `ru_raw AS (${rawCte(plan, maxProbedBuckets, slots)})`,
    `ru_union AS (${unionCte(slots)})`,
  );
  const union: PipelineState = {
    relation: 'ru_union',
    fields: rollupSourceFields.map((field, index) => ({
      name: field.name,
      column: `c${index}`,
      expr:
        field.type === 'jsonb' ? jsonbExpr(`ru_union.c${index}`) : typedExpr(`ru_union.c${index}`, 'text'),
    })),
    rest: null,
    order: [],
  };
  // The union's fields are only the source-level ones: a `$group` reading anything else has no plan.
  const state = builder.emit(union, groupOutput(plan, slots, union));
  return { state, consumed: plan.consumed };
}
