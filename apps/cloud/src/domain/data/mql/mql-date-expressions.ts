import { invalidArgument } from '../../errors.ts';
import type { ExpressionScope } from './mql-scope.ts';
import { quoteText, type SqlExpr, toNumber, toText, toTimestamp, typedExpr } from './mql-sql.ts';
import { isPlainObject, type MqlValue } from './mql-values.ts';

/**
 * Date expression operators: $dateToString (strftime-style specifiers mapped to `to_char`), $dateTrunc
 * (MongoDB bins relative to 2000-01-01, weeks start on Sunday unless `startOfWeek` says otherwise), date
 * parts ($year … $millisecond, $dayOfWeek 1 = Sunday) and $dateAdd/$dateSubtract. Time zones are Olson
 * names or ±HH:MM offsets; the default is UTC.
 */

type Compile = (value: MqlValue, scope: ExpressionScope) => SqlExpr;

const dateParts: Record<string, string> = {
  $year: 'year',
  $month: 'month',
  $dayOfMonth: 'day',
  $hour: 'hour',
  $minute: 'minute',
  $second: 'second',
  $millisecond: 'milliseconds',
  $dayOfWeek: 'dow',
  $dayOfYear: 'doy',
  $week: 'week',
  $isoWeek: 'week',
  $isoWeekYear: 'isoyear',
  $isoDayOfWeek: 'isodow',
};

const dateOperators = new Set([
  ...Object.keys(dateParts),
  '$dateToString',
  '$dateTrunc',
  '$dateAdd',
  '$dateSubtract',
]);

export function isDateOperator(name: string): boolean {
  return dateOperators.has(name);
}

const units: Record<string, string> = {
  year: 'year',
  quarter: 'quarter',
  month: 'month',
  week: 'week',
  day: 'day',
  hour: 'hour',
  minute: 'minute',
  second: 'second',
  millisecond: 'milliseconds',
};

const weekdays = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

function timezoneSql(value: MqlValue | undefined, scope: ExpressionScope): string {
  if (value === undefined || value === null) return `'UTC'`;
  if (
    typeof value !== 'string' ||
    !/^([A-Za-z_]+(\/[A-Za-z0-9_+-]+)*|[+-]\d\d(:?\d\d)?|UTC|GMT)$/.test(value)
  ) {
    throw invalidArgument(
      scope.where,
      'timezone must be an Olson name such as Europe/Berlin or an offset such as +02:00',
      value,
    );
  }
  // PostgreSQL reads a bare offset POSIX-style (inverted sign); an interval keeps the ISO meaning.
  if (/^[+-]/.test(value)) {
    const [, sign, hours, minutes] = /^([+-])(\d\d):?(\d\d)?$/.exec(value) as RegExpExecArray;
    return `interval ${quoteText(`${sign}${hours}:${minutes ?? '00'}`)}`;
  }
  return quoteText(value);
}

/** The local wall-clock time (timestamp without zone) of a date in a zone. */
function localTime(date: string, zone: string): string {
  return `((${date}) AT TIME ZONE ${zone})`;
}

function fromLocalTime(local: string, zone: string): string {
  return `((${local}) AT TIME ZONE ${zone})`;
}

function dateArgument(args: MqlValue, scope: ExpressionScope, compile: Compile, key = 'date') {
  if (isPlainObject(args) && key in args) {
    return {
      date: toTimestamp(compile(args[key] as MqlValue, scope)),
      zone: timezoneSql(args.timezone, scope),
    };
  }
  const value = Array.isArray(args) && args.length === 1 ? (args[0] as MqlValue) : args;
  return { date: toTimestamp(compile(value, scope)), zone: `'UTC'` };
}

const formatSpecifiers: Record<string, string> = {
  Y: 'YYYY',
  m: 'MM',
  d: 'DD',
  H: 'HH24',
  M: 'MI',
  S: 'SS',
  L: 'MS',
  j: 'DDD',
  G: 'IYYY',
  V: 'IW',
  u: 'ID',
  b: 'Mon',
  B: 'FMMonth',
  a: 'Dy',
  A: 'FMDay',
};

/** A MongoDB date format → a `to_char` pattern (literal text double-quoted). */
export function toCharPattern(format: string, where: string): string {
  let pattern = '';
  let literal = '';
  const flush = () => {
    if (literal) pattern += `"${literal.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
    literal = '';
  };
  for (let i = 0; i < format.length; i++) {
    const char = format[i] as string;
    if (char !== '%') {
      literal += char;
      continue;
    }
    const specifier = format[++i];
    if (specifier === '%') {
      literal += '%';
      continue;
    }
    const mapped = specifier === undefined ? undefined : formatSpecifiers[specifier];
    if (!mapped)
      throw invalidArgument(where, `unsupported $dateToString format specifier %${specifier ?? ''}`);
    flush();
    pattern += mapped;
  }
  flush();
  return pattern;
}

function dateToString(args: MqlValue, scope: ExpressionScope, compile: Compile): SqlExpr {
  if (!isPlainObject(args) || !('date' in args))
    throw invalidArgument(scope.where, '$dateToString needs {date, format}');
  const format = args.format ?? '%Y-%m-%dT%H:%M:%S.%LZ';
  if (typeof format !== 'string') throw invalidArgument(scope.where, '$dateToString format must be a string');
  const { date, zone } = dateArgument(args, scope, compile);
  const text = `to_char(${localTime(date, zone)}, ${quoteText(toCharPattern(format, scope.where))})`;
  if ('onNull' in args) {
    return typedExpr(`COALESCE(${text}, ${toText(compile(args.onNull as MqlValue, scope))})`, 'text');
  }
  return typedExpr(text, 'text');
}

function dateTrunc(args: MqlValue, scope: ExpressionScope, compile: Compile): SqlExpr {
  if (!isPlainObject(args) || !('date' in args) || typeof args.unit !== 'string' || !(args.unit in units)) {
    throw invalidArgument(
      scope.where,
      `$dateTrunc needs {date, unit} with unit one of ${Object.keys(units).join(', ')}`,
    );
  }
  const unit = args.unit;
  const binSize = args.binSize ?? 1;
  if (typeof binSize !== 'number' || !Number.isInteger(binSize) || binSize < 1) {
    throw invalidArgument(scope.where, '$dateTrunc binSize must be a positive integer', String(binSize));
  }
  const { date, zone } = dateArgument(args, scope, compile);
  const local = localTime(date, zone);
  let truncated: string;
  if (unit === 'week') {
    const start = typeof args.startOfWeek === 'string' ? args.startOfWeek.toLowerCase().slice(0, 3) : 'sun';
    const day = weekdays.findIndex((name) => name.startsWith(start));
    if (day < 0)
      throw invalidArgument(
        scope.where,
        '$dateTrunc startOfWeek must name a weekday',
        String(args.startOfWeek),
      );
    // 2000-01-02 was a Sunday: bins of binSize weeks counted from the first chosen weekday of 2000.
    truncated = `date_bin(interval '${7 * binSize} days', ${local}, timestamp '2000-01-02' + interval '${day} days')`;
  } else if (unit === 'year' || unit === 'quarter' || unit === 'month') {
    const months = unit === 'year' ? 12 * binSize : unit === 'quarter' ? 3 * binSize : binSize;
    const elapsed = `((extract(year FROM ${local})::integer - 2000) * 12 + extract(month FROM ${local})::integer - 1)`;
    truncated = `(timestamp '2000-01-01' + (floor(${elapsed}::numeric / ${months}) * ${months}) * interval '1 month')`;
  } else {
    const width = `interval '${binSize} ${units[unit]}'`;
    truncated =
      binSize === 1
        ? `date_trunc('${units[unit]}', ${local})`
        : `date_bin(${width}, ${local}, timestamp '2000-01-01')`;
  }
  return typedExpr(fromLocalTime(truncated, zone), 'date');
}

function dateAdd(name: string, args: MqlValue, scope: ExpressionScope, compile: Compile): SqlExpr {
  if (
    !isPlainObject(args) ||
    !('startDate' in args) ||
    typeof args.unit !== 'string' ||
    !(args.unit in units)
  ) {
    throw invalidArgument(scope.where, `${name} needs {startDate, unit, amount}`);
  }
  const { date } = dateArgument(args, scope, compile, 'startDate');
  const amount = toNumber(compile(args.amount as MqlValue, scope));
  const sign = name === '$dateAdd' ? '+' : '-';
  const unit = args.unit === 'quarter' ? '3 months' : `1 ${units[args.unit]}`;
  return typedExpr(`(${date} ${sign} ${amount} * interval '${unit}')`, 'date');
}

function datePart(name: string, args: MqlValue, scope: ExpressionScope, compile: Compile): SqlExpr {
  const { date, zone } = dateArgument(args, scope, compile);
  const field = dateParts[name] as string;
  const local = localTime(date, zone);
  if (name === '$dayOfWeek') return typedExpr(`(extract(dow FROM ${local}) + 1)`, 'number');
  if (name === '$millisecond')
    return typedExpr(`(floor(extract(milliseconds FROM ${local}))::integer % 1000)`, 'number');
  if (name === '$second') return typedExpr(`floor(extract(second FROM ${local}))`, 'number');
  if (name === '$week')
    return typedExpr(`floor((extract(doy FROM ${local}) - extract(dow FROM ${local}) + 6) / 7)`, 'number');
  return typedExpr(`extract(${field} FROM ${local})`, 'number');
}

export function compileDateOperator(
  name: string,
  args: MqlValue,
  scope: ExpressionScope,
  compile: Compile,
): SqlExpr {
  switch (name) {
    case '$dateToString':
      return dateToString(args, scope, compile);
    case '$dateTrunc':
      return dateTrunc(args, scope, compile);
    case '$dateAdd':
    case '$dateSubtract':
      return dateAdd(name, args, scope, compile);
    default:
      return datePart(name, args, scope, compile);
  }
}
