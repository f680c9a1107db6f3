import { isPlainObject, type MqlStage, type MqlValue } from '../mql-values.ts';

/**
 * Which pipeline prefixes the reading rollups (migration 0023) answer: optional leading `$match` stages on
 * source-level fields and whole-hour bounds (`$gte`/`$lt` a date at a whole UTC hour) on time_received /
 * time_requested, then a `$group` whose `_id` reads only source-level fields (or is null/a constant) and
 * whose accumulators are `$sum` (a number or a field path below `data`), `$avg`, `$min`, `$max` of a
 * field path below `data` through object keys, and `$count`. Anything else: no plan (the raw compiled SQL,
 * unchanged, answers — including every error message).
 */

/** Source-level document fields (one value per capture source) and their SQL over `reading_sources s`. */
export const rollupSourceFields = [
  { name: 'organization_id', sql: 's.organization_id', type: 'text' },
  { name: 'location_id', sql: 's.location_id', type: 'text' },
  { name: 'robot_id', sql: 's.robot_id', type: 'text' },
  { name: 'part_id', sql: 's.part_id', type: 'text' },
  { name: 'component_type', sql: 's.component_type', type: 'text' },
  { name: 'component_name', sql: 's.component_name', type: 'text' },
  { name: 'method_name', sql: 's.method_name', type: 'text' },
  { name: 'tags', sql: 'to_jsonb(s.tags)', type: 'jsonb' },
  { name: 'additional_parameters', sql: 's.additional_parameters', type: 'jsonb' },
] as const;

const sourceFieldNames = new Set<string>(rollupSourceFields.map((field) => field.name));

export type RollupTimeField = 'received_hour' | 'requested_hour';

export interface RollupTimeBound {
  field: RollupTimeField;
  op: '>=' | '<';
  at: Date;
}

export type RollupAccumulator =
  | { name: string; kind: 'count' }
  | { name: string; kind: 'sumConstant'; constant: number }
  | { name: string; kind: 'sum' | 'avg' | 'min' | 'max'; steps: string[] };

export interface RollupPlan {
  /** `$match` documents over source-level fields only (compiled against the sources). */
  sourceMatches: { [key: string]: MqlValue }[];
  bounds: RollupTimeBound[];
  groupId: MqlValue;
  accumulators: RollupAccumulator[];
  /** The `$group` stage (for error labels). */
  group: MqlStage;
  /** Stages answered by the plan (the leading `$match` stages and the `$group`). */
  consumed: number;
}

const hourMs = 3_600_000;
const timeFields: Record<string, RollupTimeField> = {
  time_received: 'received_hour',
  time_requested: 'requested_hour',
};

export function rollupPlanOf(stages: readonly MqlStage[]): RollupPlan | undefined {
  const sourceMatches: RollupPlan['sourceMatches'] = [];
  const bounds: RollupTimeBound[] = [];
  let index = 0;
  for (; stages[index]?.name === '$match'; index++) {
    if (!splitMatch((stages[index] as MqlStage).spec, sourceMatches, bounds)) return undefined;
  }
  const group = stages[index];
  if (!group || group.name !== '$group' || !isPlainObject(group.spec) || !('_id' in group.spec))
    return undefined;
  const groupId = group.spec._id as MqlValue;
  if (!readsOnlySourceFields(groupId)) return undefined;
  const accumulators: RollupAccumulator[] = [];
  for (const [name, spec] of Object.entries(group.spec)) {
    if (name === '_id') continue;
    if (name.includes('.') || name.startsWith('$')) return undefined;
    const accumulator = accumulatorOf(name, spec);
    if (!accumulator) return undefined;
    accumulators.push(accumulator);
  }
  return { sourceMatches, bounds, groupId, accumulators, group, consumed: index + 1 };
}

function splitMatch(
  spec: MqlValue,
  sourceMatches: RollupPlan['sourceMatches'],
  bounds: RollupTimeBound[],
): boolean {
  if (!isPlainObject(spec)) return false;
  for (const [key, value] of Object.entries(spec)) {
    if (key === '$and') {
      if (!Array.isArray(value) || value.length === 0) return false;
      for (const part of value) if (!splitMatch(part, sourceMatches, bounds)) return false;
    } else if (timeFields[key]) {
      if (!isPlainObject(value) || Object.keys(value).length === 0) return false;
      for (const [op, at] of Object.entries(value)) {
        if ((op !== '$gte' && op !== '$lt') || !(at instanceof Date)) return false;
        const ms = at.getTime();
        if (!Number.isFinite(ms) || ms % hourMs !== 0) return false;
        bounds.push({ field: timeFields[key], op: op === '$gte' ? '>=' : '<', at });
      }
    } else if (sourceFieldNames.has(key)) {
      sourceMatches.push({ [key]: value });
    } else {
      return false;
    }
  }
  return true;
}

/** True when every field reference of the expression is a whole source-level field. */
function readsOnlySourceFields(value: MqlValue): boolean {
  if (typeof value === 'string') return !value.startsWith('$') || sourceFieldNames.has(value.slice(1));
  if (Array.isArray(value)) return value.every(readsOnlySourceFields);
  if (isPlainObject(value)) {
    return Object.entries(value).every(([key, inner]) => key !== '$literal' && readsOnlySourceFields(inner));
  }
  return true;
}

/** `$data.a.b` → ['a', 'b'] when every step is an object key (not an array index, not `$`-prefixed). */
function dataSteps(value: MqlValue): string[] | undefined {
  if (typeof value !== 'string' || !value.startsWith('$data.')) return undefined;
  const steps = value.slice('$data.'.length).split('.');
  if (steps.some((step) => step === '' || step.startsWith('$') || /^\d+$/.test(step))) return undefined;
  return steps;
}

function accumulatorOf(name: string, spec: MqlValue): RollupAccumulator | undefined {
  if (!isPlainObject(spec) || Object.keys(spec).length !== 1) return undefined;
  const [operator, argument] = Object.entries(spec)[0] as [string, MqlValue];
  switch (operator) {
    case '$count':
      return isPlainObject(argument) && Object.keys(argument).length === 0
        ? { name, kind: 'count' }
        : undefined;
    case '$sum':
      if (typeof argument === 'number' && Number.isFinite(argument))
        return { name, kind: 'sumConstant', constant: argument };
      return stepsAccumulator(name, 'sum', argument);
    case '$avg':
      return stepsAccumulator(name, 'avg', argument);
    case '$min':
      return stepsAccumulator(name, 'min', argument);
    case '$max':
      return stepsAccumulator(name, 'max', argument);
    default:
      return undefined;
  }
}

function stepsAccumulator(
  name: string,
  kind: 'sum' | 'avg' | 'min' | 'max',
  argument: MqlValue,
): RollupAccumulator | undefined {
  const steps = dataSteps(argument);
  return steps ? { name, kind, steps } : undefined;
}
