import { ObjectId } from 'bson';
import { invalidArgument } from '../../errors.ts';
import { compileExpression } from './mql-expressions.ts';
import { type ExpressionScope, pathSteps } from './mql-scope.ts';
import {
  jsonbExpr,
  jsonbLiteral,
  quoteText,
  type SqlExpr,
  sqlAnd,
  sqlOr,
  textArrayLiteral,
  toJsonb,
  toTruthy,
} from './mql-sql.ts';
import { isPlainObject, isRegex, type MqlRegex, type MqlValue, toTaggedJson } from './mql-values.ts';

/**
 * `$match` query documents → a SQL condition (never NULL). Dotted paths follow query semantics: arrays on
 * the way are traversed and a condition holds when any reached value (or an element of a reached array)
 * satisfies it — PostgreSQL's lax jsonpath does exactly that traversal. Comparisons respect type
 * bracketing ({$gt: 5} never matches a string), `{f: null}` matches null and missing, `$ne`/`$nin` match
 * missing. A condition on a typed column compares natively (`component_name = 'x'`).
 */

export interface MatchScope extends ExpressionScope {
  /** Counter for unique SQL aliases inside one statement. */
  nextAlias(): string;
  /** Filled while compiling: each `((c) IS TRUE)` condition made on a typed column → its bare `(c)`. */
  bareComparisons?: Map<string, string>;
}

interface Target {
  base: SqlExpr;
  steps: string[];
}

const refusedQueryOperators = new Set(['$where', '$function', '$accumulator']);

export function compileMatch(query: MqlValue, scope: MatchScope): string {
  if (!isPlainObject(query)) throw invalidArgument(scope.where, '$match needs a query document');
  const bare = new Map<string, string>();
  const inner: MatchScope = { ...scope, bareComparisons: bare };
  const parts: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    parts.push(
      withoutIsTrue(
        compileTopLevel(key, value, inner, (path) => fieldTarget(path, inner)),
        bare,
      ),
    );
  }
  return sqlAnd(parts);
}

/**
 * A condition that is a top-level conjunct of the WHERE clause needs no `IS TRUE` (WHERE drops NULL like
 * false), and the bare comparison is what an index (B-tree on the column) matches: `time_received >= …`
 * can use one, `(time_received >= …) IS TRUE` cannot. Only conditions this compilation made with
 * `isTrue` — alone or as an AND of such — are unwrapped; anything else stays as it is.
 */
function withoutIsTrue(part: string, bare: ReadonlyMap<string, string>): string {
  const direct = bare.get(part);
  if (direct !== undefined) return direct;
  if (!part.startsWith('(') || !part.endsWith(')')) return part;
  // `(c1 AND c2 …)` as sqlAnd writes it; a piece may itself contain ` AND `, so match whole pieces.
  const unwrapped: string[] = [];
  let rest = part.slice(1, -1);
  while (rest !== '') {
    const piece = [...bare.keys()].find((key) => rest === key || rest.startsWith(`${key} AND `));
    if (piece === undefined) return part;
    unwrapped.push(bare.get(piece) as string);
    rest = rest === piece ? '' : rest.slice(piece.length + ' AND '.length);
  }
  return unwrapped.length > 1 ? `(${unwrapped.join(' AND ')})` : part;
}

function fieldTarget(path: string, scope: ExpressionScope): Target {
  const [head, ...steps] = pathSteps(path, scope.where);
  return { base: scope.field(head as string), steps };
}

type Resolve = (path: string) => Target;

function compileTopLevel(key: string, value: MqlValue, scope: MatchScope, resolve: Resolve): string {
  if (refusedQueryOperators.has(key)) throw invalidArgument(scope.where, `${key} is not allowed`);
  switch (key) {
    case '$and':
    case '$or':
    case '$nor': {
      if (!Array.isArray(value) || value.length === 0) {
        throw invalidArgument(scope.where, `${key} needs a non-empty array of query documents`);
      }
      const parts = value.map((item) => {
        if (!isPlainObject(item))
          throw invalidArgument(scope.where, `${key} entries must be query documents`);
        return sqlAnd(Object.entries(item).map(([k, v]) => compileTopLevel(k, v, scope, resolve)));
      });
      if (key === '$and') return sqlAnd(parts);
      return key === '$or' ? sqlOr(parts) : `NOT ${sqlOr(parts)}`;
    }
    case '$expr':
      return toTruthy(compileExpression(value, scope));
    case '$comment':
      return 'true';
    default:
      if (key.startsWith('$')) throw invalidArgument(scope.where, `unsupported query operator ${key}`);
      return compileCondition(resolve(key), value, scope);
  }
}

function isOperatorObject(value: MqlValue): value is { [key: string]: MqlValue } {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

function compileCondition(target: Target, condition: MqlValue, scope: MatchScope): string {
  if (isRegex(condition)) return regexMatch(target, condition, scope);
  if (!isOperatorObject(condition)) return equals(target, condition, scope);
  const parts: string[] = [];
  for (const [operator, operand] of Object.entries(condition)) {
    if (operator === '$options') {
      if (!('$regex' in condition)) throw invalidArgument(scope.where, '$options needs $regex');
      continue;
    }
    parts.push(compileOperator(target, operator, operand, condition, scope));
  }
  return sqlAnd(parts);
}

function compileOperator(
  target: Target,
  operator: string,
  operand: MqlValue,
  condition: { [key: string]: MqlValue },
  scope: MatchScope,
): string {
  switch (operator) {
    case '$eq':
      return equals(target, operand, scope);
    case '$ne':
      return `NOT ${equals(target, operand, scope)}`;
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return compare(target, operator, operand, scope);
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand)) throw invalidArgument(scope.where, `${operator} needs an array`);
      const column = typedColumn(target);
      if (
        (column?.type === 'text' || column?.type === 'oid') &&
        operand.length > 0 &&
        operand.every((item) => typeof item === 'string')
      ) {
        // One hashed `= ANY(array)` instead of a chain of ORs.
        const any = isTrue(`${column.sql} = ANY(${textArrayLiteral(operand as string[])})`, scope);
        return operator === '$in' ? any : `NOT ${any}`;
      }
      const any = sqlOr(
        operand.map((item) =>
          isRegex(item) ? regexMatch(target, item, scope) : equals(target, item, scope),
        ),
      );
      return operator === '$in' ? any : `NOT ${any}`;
    }
    case '$all': {
      if (!Array.isArray(operand)) throw invalidArgument(scope.where, '$all needs an array');
      if (operand.length === 0) return 'false';
      return sqlAnd(operand.map((item) => equals(target, item, scope)));
    }
    case '$exists':
      return exists(target, toBoolean(operand));
    case '$regex': {
      const options = condition.$options ?? '';
      if (typeof options !== 'string') throw invalidArgument(scope.where, '$options must be a string');
      if (isRegex(operand))
        return regexMatch(target, { ...operand, options: options || operand.options }, scope);
      if (typeof operand !== 'string')
        throw invalidArgument(scope.where, '$regex needs a string or regular expression');
      return regexMatch(target, { regex: true, pattern: operand, options }, scope);
    }
    case '$not':
      if (isRegex(operand)) return `NOT ${regexMatch(target, operand, scope)}`;
      if (!isOperatorObject(operand))
        throw invalidArgument(scope.where, '$not needs an operator document or a regular expression');
      return `NOT ${compileCondition(target, operand, scope)}`;
    case '$size': {
      if (typeof operand !== 'number' || !Number.isInteger(operand) || operand < 0) {
        throw invalidArgument(scope.where, '$size needs a non-negative integer', String(operand));
      }
      return anyValue(
        target,
        (c) => `jsonb_typeof(${c}) = 'array' AND jsonb_array_length(${c}) = ${operand}`,
        false,
      );
    }
    case '$type':
      return typeMatch(target, operand, scope);
    case '$mod': {
      if (!Array.isArray(operand) || operand.length !== 2 || !operand.every((n) => typeof n === 'number')) {
        throw invalidArgument(scope.where, '$mod needs [divisor, remainder]');
      }
      if (operand[0] === 0) throw invalidArgument(scope.where, '$mod divisor must not be 0');
      return anyValue(
        target,
        (c) => `jsonb_typeof(${c}) = 'number' AND trunc(${c}::numeric) % ${operand[0]} = ${operand[1]}`,
        true,
      );
    }
    case '$elemMatch':
      return elemMatch(target, operand, scope);
    default:
      if (refusedQueryOperators.has(operator))
        throw invalidArgument(scope.where, `${operator} is not allowed`);
      throw invalidArgument(scope.where, `unsupported query operator ${operator}`);
  }
}

function toBoolean(value: MqlValue): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  return value !== null;
}

/** Lax jsonpath for the steps below the target's base. */
function jsonPath(steps: readonly string[]): string {
  return `$${steps.map((step) => `.${JSON.stringify(step)}`).join('')}`;
}

function pathExists(target: Target, filter?: string, variables?: Record<string, unknown>): string {
  const path = filter ? `${jsonPath(target.steps)} ? (${filter})` : jsonPath(target.steps);
  const args = [toJsonb(target.base), `${quoteText(path)}::jsonpath`];
  if (variables) args.push(jsonbLiteral(variables));
  return `COALESCE(jsonb_path_exists(${args.join(', ')}), false)`;
}

/** Any value reached by the path, or any element of a reached array, satisfies `predicate(c)`. */
function anyValue(target: Target, predicate: (candidate: string) => string, withElements: boolean): string {
  const reached = `jsonb_path_query(${toJsonb(target.base)}, ${quoteText(jsonPath(target.steps))}::jsonpath)`;
  const direct = `EXISTS (SELECT 1 FROM ${reached} AS c(v) WHERE ${predicate('c.v')})`;
  if (!withElements) return `COALESCE(${direct}, false)`;
  const nested = `EXISTS (SELECT 1 FROM ${reached} AS c(v), jsonb_array_elements(CASE WHEN jsonb_typeof(c.v) = 'array' THEN c.v ELSE '[]'::jsonb END) AS e(v) WHERE ${predicate('e.v')})`;
  return `COALESCE(${direct} OR ${nested}, false)`;
}

function exists(target: Target, wanted: boolean): string {
  const present = target.steps.length === 0 ? `(${target.base.sql} IS NOT NULL)` : pathExists(target);
  return wanted ? present : `NOT ${present}`;
}

/** A typed column without a sub-path can be compared natively. */
function typedColumn(target: Target): SqlExpr | undefined {
  const { base } = target;
  return target.steps.length === 0 && base.type !== 'jsonb' ? base : undefined;
}

function equals(target: Target, value: MqlValue, scope: MatchScope): string {
  if (isRegex(value)) return regexMatch(target, value, scope);
  const typed = typedColumn(target);
  if (value === null) {
    if (typed) return `(${typed.sql} IS NULL)`;
    return `(${exists(target, false)} OR ${pathExists(target, '@ == null')})`;
  }
  if (typed) {
    const native = nativeLiteral(typed, value);
    if (native !== undefined) return isTrue(withRange(typed, '=', native), scope);
    if (typed.type !== 'bool' && typed.type !== 'number') return 'false';
  }
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') {
    return pathExists(target, '@ == $v', { v: value });
  }
  if (value instanceof Date) return pathExists(target, '@."$date" == $v', { v: value.getTime() });
  if (value instanceof ObjectId) return pathExists(target, '@."$oid" == $v', { v: value.toHexString() });
  const literal = jsonbLiteral(toTaggedJson(value, scope.where));
  return anyValue(target, (c) => `${c} = ${literal}`, true);
}

/**
 * A comparison on a column as a non-NULL condition. `IS TRUE` (unlike COALESCE) counts as leakproof for
 * PostgreSQL, so the condition may run before the organization's row-level security policy on `readings`
 * (migration 0024) — or below the security barrier of the hot-storage and sink views — on the table scan.
 */
function isTrue(comparison: string, scope: MatchScope): string {
  const condition = `((${comparison}) IS TRUE)`;
  scope.bareComparisons?.set(condition, `(${comparison})`);
  return condition;
}

/** The literal in the column's SQL type, or undefined when the types differ (which never matches). */
function nativeLiteral(column: SqlExpr, value: MqlValue): string | undefined {
  if ((column.type === 'text' || column.type === 'oid') && typeof value === 'string') return quoteText(value);
  if (column.type === 'oid' && value instanceof ObjectId) return quoteText(value.toHexString());
  if (column.type === 'date' && value instanceof Date)
    return `${quoteText(value.toISOString())}::timestamptz`;
  if (column.type === 'number' && typeof value === 'number') return `${value}::numeric`;
  if (column.type === 'bool' && typeof value === 'boolean') return String(value);
  return undefined;
}

/**
 * `column <symbol> literal`, and the same comparison on the column's range column when it has one: exact,
 * because the comparison holds only for a non-NULL value, which then equals the range column.
 */
function withRange(column: SqlExpr, symbol: string, literal: string): string {
  const comparison = `${column.sql} ${symbol} ${literal}`;
  return column.rangeSql ? `${comparison} AND ${column.rangeSql} ${symbol} ${literal}` : comparison;
}

const symbols: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

function compare(target: Target, operator: string, value: MqlValue, scope: MatchScope): string {
  const symbol = symbols[operator] as string;
  if (value === null) {
    return operator === '$gte' || operator === '$lte' ? equals(target, null, scope) : 'false';
  }
  const typed = typedColumn(target);
  if (typed && typed.type !== 'bool' && typed.type !== 'number') {
    const native = nativeLiteral(typed, value);
    if (native === undefined) return 'false';
    if (typed.type === 'text' || typed.type === 'oid') {
      return isTrue(`(${typed.sql}) COLLATE "C" ${symbol} ${native}`, scope);
    }
    return isTrue(withRange(typed, symbol, native), scope);
  }
  if (typeof value === 'number' || typeof value === 'string') {
    return pathExists(target, `@ ${symbol} $v`, { v: value });
  }
  if (value instanceof Date) return pathExists(target, `@."$date" ${symbol} $v`, { v: value.getTime() });
  if (value instanceof ObjectId)
    return pathExists(target, `@."$oid" ${symbol} $v`, { v: value.toHexString() });
  if (isRegex(value)) throw invalidArgument(scope.where, `${operator} does not take a regular expression`);
  // Booleans, arrays and documents: BSON order within the same type.
  const literal = jsonbLiteral(toTaggedJson(value, scope.where));
  return anyValue(
    target,
    (c) => `mql_rank(${c}) = mql_rank(${literal}) AND mql_cmp(${c}, ${literal}) ${symbol} 0`,
    true,
  );
}

const regexFlags = /^[imsx]*$/;

function regexMatch(target: Target, regex: MqlRegex, scope: MatchScope): string {
  if (!regexFlags.test(regex.options)) {
    throw invalidArgument(scope.where, '$options may only contain the flags i, m, s and x', regex.options);
  }
  const typed = typedColumn(target);
  if (typed && (regex.options === '' || regex.options === 'i')) {
    if (typed.type !== 'text') return 'false';
    const operator = regex.options === 'i' ? '~*' : '~';
    return isTrue(`${typed.sql} ${operator} ${quoteText(regex.pattern)}`, scope);
  }
  const flags = regex.options ? ` flag ${JSON.stringify(regex.options)}` : '';
  return pathExists(target, `@ like_regex ${JSON.stringify(regex.pattern)}${flags}`);
}

const typeChecks: Record<string, (c: string) => string> = {
  double: (c) => `jsonb_typeof(${c}) = 'number'`,
  int: (c) => `jsonb_typeof(${c}) = 'number' AND ${c}::numeric = trunc(${c}::numeric)`,
  long: (c) => `jsonb_typeof(${c}) = 'number' AND ${c}::numeric = trunc(${c}::numeric)`,
  decimal: (c) => `jsonb_typeof(${c}) = 'number'`,
  number: (c) => `jsonb_typeof(${c}) = 'number'`,
  string: (c) => `jsonb_typeof(${c}) = 'string'`,
  object: (c) => `mql_rank(${c}) = 4`,
  array: (c) => `jsonb_typeof(${c}) = 'array'`,
  objectId: (c) => `mql_rank(${c}) = 6`,
  bool: (c) => `jsonb_typeof(${c}) = 'boolean'`,
  date: (c) => `mql_rank(${c}) = 8`,
  null: (c) => `jsonb_typeof(${c}) = 'null'`,
};

const typeCodes: Record<number, string> = {
  1: 'double',
  2: 'string',
  3: 'object',
  4: 'array',
  7: 'objectId',
  8: 'bool',
  9: 'date',
  10: 'null',
  16: 'int',
  18: 'long',
  19: 'decimal',
};

function typeMatch(target: Target, operand: MqlValue, scope: MatchScope): string {
  const names = Array.isArray(operand) ? operand : [operand];
  const checks = names.map((name) => {
    const key = typeof name === 'number' ? typeCodes[name] : name;
    const check = typeof key === 'string' ? typeChecks[key] : undefined;
    if (!check) throw invalidArgument(scope.where, `unsupported $type ${String(name)}`);
    return check;
  });
  return anyValue(target, (c) => sqlOr(checks.map((check) => `(${check(c)})`)), true);
}

function elemMatch(target: Target, operand: MqlValue, scope: MatchScope): string {
  if (!isPlainObject(operand)) throw invalidArgument(scope.where, '$elemMatch needs a query document');
  const alias = scope.nextAlias();
  const element = jsonbExpr(`${alias}.v`);
  const elementScope: MatchScope = {
    ...scope,
    field: (name) => jsonbExpr(`(${alias}.v -> ${quoteText(name)})`),
    root: () => element,
  };
  let predicate: string;
  if (isOperatorObject(operand)) {
    predicate = compileCondition({ base: element, steps: [] }, operand, elementScope);
  } else {
    const parts = Object.entries(operand as { [key: string]: MqlValue }).map(([key, value]) =>
      compileTopLevel(key, value, elementScope, (path) => {
        const steps = pathSteps(path, scope.where);
        return { base: element, steps };
      }),
    );
    predicate = `jsonb_typeof(${alias}.v) = 'object' AND ${sqlAnd(parts)}`;
  }
  const reached = `jsonb_path_query(${toJsonb(target.base)}, ${quoteText(jsonPath(target.steps))}::jsonpath)`;
  return `COALESCE(EXISTS (SELECT 1 FROM ${reached} AS ${alias}_array(v), jsonb_array_elements(CASE WHEN jsonb_typeof(${alias}_array.v) = 'array' THEN ${alias}_array.v ELSE '[]'::jsonb END) AS ${alias}(v) WHERE ${predicate}), false)`;
}
