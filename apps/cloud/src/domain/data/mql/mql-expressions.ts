import { ObjectId } from 'bson';
import { invalidArgument } from '../../errors.ts';
import { compileDateOperator, isDateOperator } from './mql-date-expressions.ts';
import { type ExpressionScope, resolveFieldPath } from './mql-scope.ts';
import {
  asJsonb,
  jsonbExpr,
  jsonbLiteral,
  quoteText,
  type SqlExpr,
  sqlAnd,
  sqlOr,
  toFloat,
  toJsonb,
  toNumber,
  toText,
  toTimestamp,
  toTruthy,
  typedExpr,
} from './mql-sql.ts';
import { isPlainObject, isRegex, type MqlValue, toTaggedJson } from './mql-values.ts';

/**
 * Aggregation expressions ($project, $addFields, $group keys and accumulators, $expr …) → SQL. Field paths
 * follow MongoDB (missing vs null, arrays mapped by a path step), comparisons follow BSON order across
 * types, arithmetic keeps exact numerics except where MongoDB answers a double ($divide, $sqrt, …).
 */

type OperatorCompiler = (args: MqlValue, scope: ExpressionScope, name: string) => SqlExpr;

export function compileExpression(value: MqlValue, scope: ExpressionScope): SqlExpr {
  if (typeof value === 'string') {
    return value.startsWith('$')
      ? resolveFieldPath(value, scope)
      : typedExpr(`${quoteText(value)}::text`, 'text');
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalidArgument(scope.where, 'NaN and Infinity are not supported');
    return typedExpr(`${value}::numeric`, 'number');
  }
  if (typeof value === 'boolean') return typedExpr(String(value), 'bool');
  if (value === null) return jsonbExpr(`'null'::jsonb`);
  if (value instanceof Date) return typedExpr(`${quoteText(value.toISOString())}::timestamptz`, 'date');
  if (value instanceof ObjectId) return typedExpr(quoteText(value.toHexString()), 'oid');
  if (isRegex(value)) throw invalidArgument(scope.where, 'a regular expression is only allowed in $match');
  if (Array.isArray(value)) {
    if (value.length === 0) return jsonbExpr(`'[]'::jsonb`);
    const items = value.map((item) => `COALESCE(${toJsonb(compileExpression(item, scope))}, 'null'::jsonb)`);
    return jsonbExpr(`jsonb_build_array(${items.join(', ')})`);
  }
  const keys = Object.keys(value);
  const operator = keys.find((key) => key.startsWith('$'));
  if (operator !== undefined) {
    if (keys.length !== 1) {
      throw invalidArgument(
        scope.where,
        `an expression object with ${operator} must have exactly one key`,
        keys.join(','),
      );
    }
    return compileOperator(operator, value[operator] as MqlValue, scope);
  }
  return compileObjectExpression(value, scope);
}

/** `{a: <expr>, b: <expr>}` → a document; fields that evaluate to missing are left out. */
export function compileObjectExpression(value: { [key: string]: MqlValue }, scope: ExpressionScope): SqlExpr {
  const entries = Object.entries(value);
  if (entries.length === 0) return jsonbExpr(`'{}'::jsonb`);
  const parts = entries.map(([key, item]) => {
    if (key.includes('.') || key.startsWith('$')) {
      throw invalidArgument(
        scope.where,
        'a field name in an expression object must not contain . or start with $',
        key,
      );
    }
    return `${quoteText(key)} : ${toJsonb(compileExpression(item, scope))}`;
  });
  return jsonbExpr(`json_object(${parts.join(', ')} ABSENT ON NULL RETURNING jsonb)`);
}

function compileOperator(name: string, args: MqlValue, scope: ExpressionScope): SqlExpr {
  if (isDateOperator(name)) return compileDateOperator(name, args, scope, compileExpression);
  const compiler = operators[name];
  if (!compiler) throw invalidArgument(scope.where, `unsupported expression operator ${name}`);
  return compiler(args, scope, name);
}

/** The arguments as a list (a single non-array argument is a list of one). */
function argList(args: MqlValue, scope: ExpressionScope, name: string, min: number, max = min): MqlValue[] {
  const list = Array.isArray(args) ? args : [args];
  if (list.length < min || list.length > max) {
    const expected = min === max ? `${min}` : `${min} to ${max}`;
    throw invalidArgument(scope.where, `${name} takes ${expected} arguments`, list.length);
  }
  return list;
}

function compileAll(args: readonly MqlValue[], scope: ExpressionScope): SqlExpr[] {
  return args.map((arg) => compileExpression(arg, scope));
}

function numberResult(sql: string): SqlExpr {
  return typedExpr(sql, 'number');
}

function variadicArithmetic(symbol: string): OperatorCompiler {
  return (args, scope, name) => {
    const values = compileAll(argList(args, scope, name, 1, 1000), scope);
    const dates = values.filter((value) => value.type === 'date');
    if (symbol === '+' && dates.length === 1) {
      const others = values
        .filter((value) => value.type !== 'date')
        .map((value) => `COALESCE(${toNumber(value)}, 0)`);
      const ms = others.length ? others.join(' + ') : '0';
      return typedExpr(`(${toTimestamp(dates[0] as SqlExpr)} + (${ms}) * interval '1 millisecond')`, 'date');
    }
    return numberResult(`(${values.map(toNumber).join(` ${symbol} `)})`);
  };
}

function unaryNumeric(template: (x: string) => string, useFloat = false): OperatorCompiler {
  return (args, scope, name) => {
    const [arg] = compileAll(argList(args, scope, name, 1), scope);
    const x = useFloat ? toFloat(arg as SqlExpr) : toNumber(arg as SqlExpr);
    return numberResult(template(x));
  };
}

function binaryNumeric(template: (a: string, b: string) => string, useFloat = false): OperatorCompiler {
  return (args, scope, name) => {
    const [a, b] = compileAll(argList(args, scope, name, 2), scope) as [SqlExpr, SqlExpr];
    const convert = useFloat ? toFloat : toNumber;
    return numberResult(template(convert(a), convert(b)));
  };
}

function subtract(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [a, b] = compileAll(argList(args, scope, name, 2), scope) as [SqlExpr, SqlExpr];
  if (a.type === 'date' && b.type === 'date') {
    return numberResult(`floor(extract(epoch FROM (${a.sql} - ${b.sql})) * 1000)`);
  }
  if (a.type === 'date') {
    return typedExpr(`(${a.sql} - ${toNumber(b)} * interval '1 millisecond')`, 'date');
  }
  return numberResult(`(${toNumber(a)} - ${toNumber(b)})`);
}

const comparisonSymbols: Record<string, string> = {
  $eq: '=',
  $ne: '<>',
  $gt: '>',
  $gte: '>=',
  $lt: '<',
  $lte: '<=',
};

/** Two values in BSON order: native when both are the same non-null type, else by mql_cmp. */
export function compareValues(a: SqlExpr, b: SqlExpr, symbol: string): string {
  const comparable = a.type === b.type && (a.type === 'number' || a.type === 'date' || a.type === 'bool');
  // Native comparison when both sides are present; a NULL (missing or null) falls back to BSON order.
  if (comparable && isConstant(b)) {
    return `COALESCE(${a.sql} ${symbol} ${b.sql}, mql_cmp(${toJsonb(a)}, ${toJsonb(b)}) ${symbol} 0)`;
  }
  if (a.type === 'text' && b.type === 'text' && isConstant(b)) {
    return `COALESCE((${a.sql}) COLLATE "C" ${symbol} ${b.sql}, mql_cmp(${toJsonb(a)}, ${toJsonb(b)}) ${symbol} 0)`;
  }
  return `(mql_cmp(${toJsonb(a)}, ${toJsonb(b)}) ${symbol} 0)`;
}

function isConstant(expr: SqlExpr): boolean {
  return /^('([^']|'')*'(::\w+)?|-?\d+(\.\d+)?(e[+-]?\d+)?::numeric|true|false)$/i.test(expr.sql);
}

function comparison(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [a, b] = compileAll(argList(args, scope, name, 2), scope) as [SqlExpr, SqlExpr];
  return typedExpr(compareValues(a, b, comparisonSymbols[name] as string), 'bool');
}

function logical(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const values = compileAll(argList(args, scope, name, 0, 1000), scope).map(toTruthy);
  return typedExpr(name === '$and' ? sqlAnd(values) : sqlOr(values), 'bool');
}

/** Both branches as one SQL type (jsonb unless they already agree). */
function unify(values: readonly SqlExpr[]): { sqls: string[]; type: SqlExpr['type'] } {
  const first = values[0] as SqlExpr;
  if (values.every((value) => value.type === first.type && value.type !== 'jsonb' && !value.nullIsMissing)) {
    return { sqls: values.map((value) => value.sql), type: first.type };
  }
  return { sqls: values.map(toJsonb), type: 'jsonb' };
}

function branchResult(sql: string, type: SqlExpr['type']): SqlExpr {
  return type === 'jsonb' ? jsonbExpr(sql) : typedExpr(sql, type);
}

function cond(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  let parts: MqlValue[];
  if (isPlainObject(args)) {
    for (const key of ['if', 'then', 'else']) {
      if (!(key in args)) throw invalidArgument(scope.where, `${name} needs if, then and else`);
    }
    parts = [args.if as MqlValue, args.then as MqlValue, args.else as MqlValue];
  } else {
    parts = argList(args, scope, name, 3);
  }
  const [test, ...branches] = compileAll(parts, scope) as [SqlExpr, SqlExpr, SqlExpr];
  const { sqls, type } = unify(branches);
  return branchResult(`CASE WHEN ${toTruthy(test)} THEN ${sqls[0]} ELSE ${sqls[1]} END`, type);
}

function switchOperator(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  if (!isPlainObject(args) || !Array.isArray(args.branches)) {
    throw invalidArgument(scope.where, `${name} needs {branches: [{case, then}], default}`);
  }
  const tests: SqlExpr[] = [];
  const results: SqlExpr[] = [];
  for (const branch of args.branches) {
    if (!isPlainObject(branch) || !('case' in branch) || !('then' in branch)) {
      throw invalidArgument(scope.where, `${name} branches need case and then`);
    }
    tests.push(compileExpression(branch.case as MqlValue, scope));
    results.push(compileExpression(branch.then as MqlValue, scope));
  }
  const fallback =
    'default' in args
      ? compileExpression(args.default as MqlValue, scope)
      : jsonbExpr(`mql_fail(${quoteText(`${name}: no branch matched and there is no default`)})`);
  const { sqls, type } = unify([...results, fallback]);
  const whens = tests.map((test, i) => `WHEN ${toTruthy(test)} THEN ${sqls[i]}`).join(' ');
  return branchResult(`CASE ${whens} ELSE ${sqls[sqls.length - 1]} END`, type);
}

function ifNull(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const values = compileAll(argList(args, scope, name, 2, 100), scope).map(toJsonb);
  const last = values.pop() as string;
  const candidates = values.map((value) => `NULLIF(${value}, 'null'::jsonb)`);
  return jsonbExpr(`COALESCE(${[...candidates, last].join(', ')})`);
}

function concat(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const values = compileAll(argList(args, scope, name, 0, 1000), scope).map(toText);
  return typedExpr(values.length ? `(${values.join(' || ')})` : `''`, 'text');
}

function textCase(fn: string): OperatorCompiler {
  return (args, scope, name) => {
    const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
    return typedExpr(`COALESCE(${fn}(${toStringSql(arg)}), '')`, 'text');
  };
}

function substring(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [text, start, length] = compileAll(argList(args, scope, name, 3), scope) as [
    SqlExpr,
    SqlExpr,
    SqlExpr,
  ];
  const len = `${toNumber(length)}::integer`;
  return typedExpr(
    `COALESCE(substr(${toStringSql(text)}, ${toNumber(start)}::integer + 1, CASE WHEN ${len} < 0 THEN NULL ELSE ${len} END), substr(${toStringSql(text)}, ${toNumber(start)}::integer + 1), '')`,
    'text',
  );
}

/** $toString semantics: strings as is, numbers and booleans as text, dates in ISO form, ObjectIds as hex. */
export function toStringSql(expr: SqlExpr): string {
  switch (expr.type) {
    case 'text':
    case 'oid':
      return expr.sql;
    case 'number':
    case 'bool':
      return `(${expr.sql})::text`;
    case 'date':
      return `to_char((${expr.sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    default:
      return `CASE jsonb_typeof(${expr.sql}) WHEN 'string' THEN ${expr.sql} #>> '{}' WHEN 'number' THEN (${expr.sql})::text WHEN 'boolean' THEN (${expr.sql})::text WHEN 'object' THEN CASE WHEN mql_is_date(${expr.sql}) THEN to_char(mql_ts(${expr.sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ELSE ${expr.sql} ->> '$oid' END END`;
  }
}

function convertTo(target: 'string' | 'int' | 'double' | 'bool' | 'date'): OperatorCompiler {
  return (args, scope, name) => {
    const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
    const json = toJsonb(arg);
    switch (target) {
      case 'string':
        return typedExpr(toStringSql(arg), 'text');
      case 'int':
      case 'double': {
        const numeric = `CASE jsonb_typeof(${json}) WHEN 'number' THEN (${json})::numeric WHEN 'boolean' THEN CASE WHEN (${json})::boolean THEN 1 ELSE 0 END WHEN 'string' THEN (${json} #>> '{}')::numeric WHEN 'object' THEN (${json} -> '$date')::numeric END`;
        return numberResult(target === 'int' ? `trunc(${numeric})` : numeric);
      }
      case 'bool':
        return typedExpr(
          `CASE WHEN ${json} IS NULL OR ${json} = 'null'::jsonb THEN NULL ELSE mql_truthy(${json}) END`,
          'bool',
        );
      default:
        return typedExpr(
          `CASE jsonb_typeof(${json}) WHEN 'number' THEN 'epoch'::timestamptz + (${json})::numeric * interval '1 millisecond' WHEN 'string' THEN (${json} #>> '{}')::timestamptz WHEN 'object' THEN mql_ts(${json}) END`,
          'date',
        );
    }
  };
}

function typeName(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
  const json = toJsonb(arg);
  return typedExpr(
    `CASE WHEN ${json} IS NULL THEN 'missing' ELSE CASE mql_rank(${json}) WHEN 1 THEN 'null' WHEN 2 THEN CASE WHEN (${json})::numeric = trunc((${json})::numeric) THEN 'int' ELSE 'double' END WHEN 3 THEN 'string' WHEN 4 THEN 'object' WHEN 5 THEN 'array' WHEN 6 THEN 'objectId' WHEN 7 THEN 'bool' WHEN 8 THEN 'date' END END`,
    'text',
  );
}

function isType(kind: 'number' | 'array'): OperatorCompiler {
  return (args, scope, name) => {
    const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
    return typedExpr(`COALESCE(jsonb_typeof(${toJsonb(arg)}) = '${kind}', false)`, 'bool');
  };
}

function arrayOperator(kind: 'size' | 'first' | 'last'): OperatorCompiler {
  return (args, scope, name) => {
    const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
    const json = toJsonb(arg);
    if (kind === 'size')
      return numberResult(`CASE WHEN jsonb_typeof(${json}) = 'array' THEN jsonb_array_length(${json}) END`);
    const index = kind === 'first' ? 0 : -1;
    return jsonbExpr(`CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} -> ${index} END`);
  };
}

function arrayElemAt(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [array, index] = compileAll(argList(args, scope, name, 2), scope) as [SqlExpr, SqlExpr];
  const json = toJsonb(array);
  return jsonbExpr(
    `CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} -> (${toNumber(index)})::integer END`,
  );
}

function inArray(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [needle, array] = compileAll(argList(args, scope, name, 2), scope) as [SqlExpr, SqlExpr];
  const json = toJsonb(array);
  return typedExpr(
    `COALESCE((SELECT bool_or(element = ${toJsonb(needle)}) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} ELSE mql_fail(${quoteText(`${name} needs an array as its second argument`)}) END) element), false)`,
    'bool',
  );
}

function concatArrays(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const values = compileAll(argList(args, scope, name, 0, 1000), scope).map(toJsonb);
  if (values.length === 0) return jsonbExpr(`'[]'::jsonb`);
  const arrays = values.map((value) => `CASE WHEN jsonb_typeof(${value}) = 'array' THEN ${value} END`);
  return jsonbExpr(`(${arrays.join(' || ')})`);
}

function mergeObjects(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const values = compileAll(argList(args, scope, name, 1, 1000), scope).map(toJsonb);
  const objects = values.map(
    (value) => `CASE WHEN jsonb_typeof(${value}) = 'object' THEN ${value} ELSE '{}'::jsonb END`,
  );
  return jsonbExpr(`(${objects.join(' || ')})`);
}

function literal(args: MqlValue, scope: ExpressionScope): SqlExpr {
  return jsonbExpr(jsonbLiteral(toTaggedJson(args, scope.where)));
}

function not(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
  return typedExpr(`NOT ${toTruthy(arg)}`, 'bool');
}

function cmp(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [a, b] = compileAll(argList(args, scope, name, 2), scope) as [SqlExpr, SqlExpr];
  return numberResult(`mql_cmp(${toJsonb(a)}, ${toJsonb(b)})`);
}

function round(fn: 'round' | 'trunc'): OperatorCompiler {
  return (args, scope, name) => {
    const [value, place] = compileAll(argList(args, scope, name, 1, 2), scope) as [
      SqlExpr,
      SqlExpr | undefined,
    ];
    const digits = place ? `(${toNumber(place)})::integer` : '0';
    return numberResult(`${fn}(${toNumber(value)}, ${digits})`);
  };
}

function strLen(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  const [arg] = compileAll(argList(args, scope, name, 1), scope) as [SqlExpr];
  return numberResult(`char_length(${toText(arg)})`);
}

function trim(args: MqlValue, scope: ExpressionScope, name: string): SqlExpr {
  if (!isPlainObject(args) || !('input' in args)) throw invalidArgument(scope.where, `${name} needs {input}`);
  const input = toText(compileExpression(args.input as MqlValue, scope));
  const chars =
    'chars' in args ? toText(compileExpression(args.chars as MqlValue, scope)) : `E' \\t\\n\\r\\f\\v'`;
  const fn = name === '$ltrim' ? 'ltrim' : name === '$rtrim' ? 'rtrim' : 'btrim';
  return typedExpr(`${fn}(${input}, ${chars})`, 'text');
}

const operators: Record<string, OperatorCompiler> = {
  $add: variadicArithmetic('+'),
  $multiply: variadicArithmetic('*'),
  $subtract: subtract,
  $divide: binaryNumeric((a, b) => `(${a} / ${b})`, true),
  $mod: binaryNumeric((a, b) => `mod(${a}, ${b})`),
  $pow: binaryNumeric((a, b) => `power(${a}, ${b})`, true),
  $abs: unaryNumeric((x) => `abs(${x})`),
  $ceil: unaryNumeric((x) => `ceil(${x})`),
  $floor: unaryNumeric((x) => `floor(${x})`),
  $sqrt: unaryNumeric((x) => `sqrt(${x})`, true),
  $exp: unaryNumeric((x) => `exp(${x})`, true),
  $ln: unaryNumeric((x) => `ln(${x})`, true),
  $log10: unaryNumeric((x) => `log(${x})`, true),
  $round: round('round'),
  $trunc: round('trunc'),
  $eq: comparison,
  $ne: comparison,
  $gt: comparison,
  $gte: comparison,
  $lt: comparison,
  $lte: comparison,
  $cmp: cmp,
  $and: logical,
  $or: logical,
  $not: not,
  $cond: cond,
  $switch: switchOperator,
  $ifNull: ifNull,
  $concat: concat,
  $toUpper: textCase('upper'),
  $toLower: textCase('lower'),
  $substr: substring,
  $substrCP: substring,
  $strLenCP: strLen,
  $trim: trim,
  $ltrim: trim,
  $rtrim: trim,
  $toString: convertTo('string'),
  $toInt: convertTo('int'),
  $toLong: convertTo('int'),
  $toDouble: convertTo('double'),
  $toDecimal: convertTo('double'),
  $toBool: convertTo('bool'),
  $toDate: convertTo('date'),
  $type: typeName,
  $isNumber: isType('number'),
  $isArray: isType('array'),
  $size: arrayOperator('size'),
  $first: arrayOperator('first'),
  $last: arrayOperator('last'),
  $arrayElemAt: arrayElemAt,
  $in: inArray,
  $concatArrays: concatArrays,
  $mergeObjects: mergeObjects,
  $literal: literal,
};

/** The value as jsonb, for places that store it (fields, group keys). */
export function compileToJsonb(value: MqlValue, scope: ExpressionScope): SqlExpr {
  return asJsonb(compileExpression(value, scope));
}
