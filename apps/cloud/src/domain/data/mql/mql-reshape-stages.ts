import { invalidArgument } from '../../errors.ts';
import { compileExpression } from './mql-expressions.ts';
import {
  type PipelineBuilder,
  type PipelineState,
  passThrough,
  type StageOutput,
  stateScope,
} from './mql-pipeline-state.ts';
import { type ExpressionScope, pathSteps } from './mql-scope.ts';
import { jsonbExpr, jsonbLiteral, quoteText, type SqlExpr, textArrayLiteral, toJsonb } from './mql-sql.ts';
import { isPlainObject, type MqlStage, type MqlValue, stageLabel } from './mql-values.ts';

/** $project, $addFields/$set, $unset, $replaceRoot/$replaceWith: stages that reshape each document. */

type ProjectionNode =
  | { kind: 'include' }
  | { kind: 'exclude' }
  | { kind: 'computed'; value: MqlValue }
  | { kind: 'nested'; children: Map<string, ProjectionNode> };

function where(stage: MqlStage): string {
  return stageLabel(stage);
}

function isExpressionObject(value: MqlValue): boolean {
  return isPlainObject(value) && Object.keys(value).some((key) => key.startsWith('$'));
}

/** Adds `steps` → node to a projection tree, refusing a path given twice or inside another. */
function addToTree(
  tree: Map<string, ProjectionNode>,
  steps: string[],
  node: ProjectionNode,
  at: string,
): void {
  const [head, ...rest] = steps as [string, ...string[]];
  const existing = tree.get(head);
  if (rest.length === 0) {
    if (existing) throw invalidArgument(at, 'path collision in the projection', head);
    tree.set(head, node);
    return;
  }
  if (existing && existing.kind !== 'nested')
    throw invalidArgument(at, 'path collision in the projection', head);
  const children = existing?.kind === 'nested' ? existing.children : new Map<string, ProjectionNode>();
  tree.set(head, { kind: 'nested', children });
  addToTree(children, rest, node, at);
}

function parseProjection(
  spec: MqlValue,
  at: string,
  tree = new Map<string, ProjectionNode>(),
  prefix: string[] = [],
) {
  if (!isPlainObject(spec) || (prefix.length === 0 && Object.keys(spec).length === 0)) {
    throw invalidArgument(at, 'needs a non-empty document of fields');
  }
  for (const [key, value] of Object.entries(spec)) {
    const steps = [...prefix, ...pathSteps(key, at)];
    if (isPlainObject(value) && !isExpressionObject(value)) {
      parseProjection(value, at, tree, steps);
    } else if (value === true || (typeof value === 'number' && value !== 0)) {
      addToTree(tree, steps, { kind: 'include' }, at);
    } else if (value === false || value === 0) {
      addToTree(tree, steps, { kind: 'exclude' }, at);
    } else {
      addToTree(tree, steps, { kind: 'computed', value }, at);
    }
  }
  return tree;
}

function collectKinds(tree: Map<string, ProjectionNode>, kinds: Set<string>, top = true): void {
  for (const [key, node] of tree) {
    if (node.kind === 'nested') collectKinds(node.children, kinds, false);
    else if (!(top && key === '_id')) kinds.add(node.kind === 'computed' ? 'include' : node.kind);
  }
}

/** A projection subtree as the jsonb spec `mql_prune` takes, and the computed paths below it. */
function splitNested(
  children: Map<string, ProjectionNode>,
  prefix: string[] = [],
): { prune: Record<string, unknown>; computed: { steps: string[]; value: MqlValue }[] } {
  const prune: Record<string, unknown> = {};
  const computed: { steps: string[]; value: MqlValue }[] = [];
  for (const [key, node] of children) {
    if (node.kind === 'include' || node.kind === 'exclude') prune[key] = true;
    else if (node.kind === 'computed') computed.push({ steps: [...prefix, key], value: node.value });
    else {
      const inner = splitNested(node.children, [...prefix, key]);
      if (Object.keys(inner.prune).length) prune[key] = inner.prune;
      computed.push(...inner.computed);
    }
  }
  return { prune, computed };
}

function setPaths(
  base: string,
  paths: { steps: string[]; value: MqlValue }[],
  scope: ExpressionScope,
): string {
  let result = base;
  for (const { steps, value } of paths) {
    result = `mql_set(${result}, ${textArrayLiteral(steps)}, ${toJsonb(compileExpression(value, scope))})`;
  }
  return result;
}

export function compileProject(
  stage: MqlStage,
  input: PipelineState,
  builder: PipelineBuilder,
): PipelineState {
  const at = where(stage);
  let tree = parseProjection(stage.spec, at);
  const kinds = new Set<string>();
  collectKinds(tree, kinds);
  if (kinds.has('include') && kinds.has('exclude')) {
    throw invalidArgument(at, 'cannot mix inclusion and exclusion (except for _id)');
  }
  if (!kinds.has('include') && (kinds.has('exclude') || tree.get('_id')?.kind === 'exclude')) {
    return excludeFields(input, builder, tree, stateScope(input, at));
  }
  const scope = stateScope(input, at);
  const fields: StageOutput['fields'] = [];
  if (!tree.has('_id')) tree = new Map([['_id', { kind: 'include' } as ProjectionNode], ...tree]);
  for (const [name, node] of tree) {
    if (node.kind === 'exclude') continue;
    if (node.kind === 'include') fields.push({ name, expr: scope.field(name) });
    else if (node.kind === 'computed') fields.push({ name, expr: compileExpression(node.value, scope) });
    else {
      const { prune, computed } = splitNested(node.children);
      const current = toJsonb(scope.field(name));
      const kept = Object.keys(prune).length
        ? `mql_prune(${current}, ${jsonbLiteral(prune)}, true)`
        : 'NULL::jsonb';
      const value = computed.length ? setPaths(kept, computed, scope) : kept;
      // A nested inclusion of a field that is not a document leaves the field out (MongoDB does too).
      fields.push({ name, expr: jsonbExpr(value) });
    }
  }
  return builder.emit(input, { fields, rest: null });
}

function excludeFields(
  input: PipelineState,
  builder: PipelineBuilder,
  tree: Map<string, ProjectionNode>,
  scope: ExpressionScope,
): PipelineState {
  const dropped: string[] = [];
  const nested = new Map<string, Record<string, unknown>>();
  for (const [name, node] of tree) {
    if (node.kind === 'exclude') dropped.push(name);
    else if (node.kind === 'nested') nested.set(name, splitNested(node.children).prune);
  }
  const { fields, rest } = passThrough(input);
  const kept = fields
    .filter((field) => !dropped.includes(field.name))
    .map((field) => {
      const prune = nested.get(field.name);
      return prune
        ? {
            name: field.name,
            expr: jsonbExpr(`mql_prune(${toJsonb(field.expr)}, ${jsonbLiteral(prune)}, false)`),
          }
        : field;
    });
  let restSql = rest;
  if (restSql) {
    if (dropped.length) restSql = `(${restSql} - ${textArrayLiteral(dropped)})`;
    // Nested exclusions of fields that only live in the rest column become known fields.
    for (const [name, prune] of nested) {
      if (kept.some((field) => field.name === name)) continue;
      kept.push({
        name,
        expr: jsonbExpr(`mql_prune(${toJsonb(scope.field(name))}, ${jsonbLiteral(prune)}, false)`),
      });
    }
  }
  return builder.emit(input, { fields: kept, rest: restSql });
}

export function compileUnset(stage: MqlStage, input: PipelineState, builder: PipelineBuilder): PipelineState {
  const names = typeof stage.spec === 'string' ? [stage.spec] : stage.spec;
  if (!Array.isArray(names) || names.length === 0 || !names.every((name) => typeof name === 'string')) {
    throw invalidArgument(where(stage), 'needs a field name or a non-empty array of field names');
  }
  const tree = new Map<string, ProjectionNode>();
  for (const name of names as string[])
    addToTree(tree, pathSteps(name, where(stage)), { kind: 'exclude' }, where(stage));
  return excludeFields(input, builder, tree, stateScope(input, where(stage)));
}

/** Flattens `{a: {b: <expr>}}` (documents without operators merge into embedded documents) to paths. */
function flattenAddFields(spec: { [key: string]: MqlValue }, at: string, prefix: string[] = []) {
  const paths: { steps: string[]; value: MqlValue }[] = [];
  for (const [key, value] of Object.entries(spec)) {
    const steps = [...prefix, ...pathSteps(key, at)];
    if (isPlainObject(value) && !isExpressionObject(value) && Object.keys(value).length > 0) {
      paths.push(...flattenAddFields(value, at, steps));
    } else {
      paths.push({ steps, value });
    }
  }
  return paths;
}

export function compileAddFields(
  stage: MqlStage,
  input: PipelineState,
  builder: PipelineBuilder,
): PipelineState {
  const at = where(stage);
  if (!isPlainObject(stage.spec) || Object.keys(stage.spec).length === 0) {
    throw invalidArgument(at, 'needs a non-empty document of fields');
  }
  const scope = stateScope(input, at);
  const { fields, rest } = passThrough(input);
  const output = [...fields];
  const nested = new Map<string, { steps: string[]; value: MqlValue }[]>();
  for (const { steps, value } of flattenAddFields(stage.spec, at)) {
    const [name, ...below] = steps as [string, ...string[]];
    if (below.length) {
      nested.set(name, [...(nested.get(name) ?? []), { steps: below, value }]);
      continue;
    }
    setField(output, name, compileExpression(value, scope));
  }
  for (const [name, paths] of nested) {
    const current = output.find((field) => field.name === name)?.expr ?? scope.field(name);
    setField(output, name, jsonbExpr(setPaths(toJsonb(current), paths, scope)));
  }
  return builder.emit(input, { fields: output, rest });
}

function setField(fields: StageOutput['fields'], name: string, expr: SqlExpr): void {
  const index = fields.findIndex((field) => field.name === name);
  if (index >= 0) fields[index] = { name, expr };
  else fields.push({ name, expr });
}

export function compileReplaceRoot(
  stage: MqlStage,
  input: PipelineState,
  builder: PipelineBuilder,
): PipelineState {
  const at = where(stage);
  let newRoot: MqlValue;
  if (stage.name === '$replaceRoot') {
    if (!isPlainObject(stage.spec) || !('newRoot' in stage.spec))
      throw invalidArgument(at, 'needs {newRoot: <expression>}');
    newRoot = stage.spec.newRoot as MqlValue;
  } else {
    newRoot = stage.spec;
  }
  const scope = stateScope(input, at);
  if (isPlainObject(newRoot) && !isExpressionObject(newRoot)) {
    const fields = Object.entries(newRoot).map(([name, value]) => {
      if (name.includes('.')) throw invalidArgument(at, 'a field name in newRoot must not contain .', name);
      return { name, expr: compileExpression(value, scope) };
    });
    return builder.emit(input, { fields, rest: null });
  }
  const value = toJsonb(compileExpression(newRoot, scope));
  const message = quoteText(`${at}: newRoot must evaluate to a document`);
  const checked = `CASE WHEN jsonb_typeof(${value}) = 'object' AND NOT mql_is_date(${value}) THEN ${value} ELSE mql_fail(${message}) END`;
  return builder.emit(input, { fields: [], rest: checked });
}
