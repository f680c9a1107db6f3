import { type ParsedSql, type SyntaxNode, stringsOf, tokenAt, walkNodes } from './sql-syntax-tree.ts';

/**
 * The reference service's SQL addresses document fields with dots: `data.readings.temperature`. In
 * PostgreSQL `data` is a jsonb column, so such a column reference becomes `(data #> ARRAY['readings',
 * 'temperature'])` — found in the parse tree, replaced at its byte span in the user's text (everything
 * else stays as written). The jsonb value is then read as a number, text or boolean where the context
 * needs one: compared with a number/string/boolean literal, in arithmetic, LIKE, or as the argument of a
 * numeric aggregate — through `sensordata.json_number/json_text/json_boolean`, which answer NULL for a
 * value of another JSON type (as a document database skips it). An unaliased dotted output column is
 * named after its last segment (`SELECT data.readings.temperature` → column `temperature`). Schema-qualified
 * references to the table (`"sensorData".readings`) become `sensordata.readings`.
 */

export interface TextEdit {
  /** Byte offsets in the statement text. */
  start: number;
  end: number;
  text: string;
}

const jsonColumns = new Set(['data', 'additional_parameters']);
const comparisonOperators = new Set(['=', '<>', '!=', '<', '>', '<=', '>=']);
const arithmeticOperators = new Set(['+', '-', '*', '/', '%', '^']);
const numericAggregates = new Set([
  'avg',
  'sum',
  'min',
  'max',
  'stddev',
  'stddev_pop',
  'stddev_samp',
  'variance',
  'var_pop',
  'var_samp',
  'abs',
  'round',
  'ceil',
  'floor',
  'sqrt',
]);

type Reading = 'number' | 'text' | 'boolean';

export function dottedPathEdits(parsed: ParsedSql, relationNames: ReadonlySet<string>): TextEdit[] {
  const readings = new Map<SyntaxNode, Reading>();
  const unnamedOutputs = new Set<SyntaxNode>();
  walkNodes(parsed.tree, (type, body) => {
    if (type === 'A_Expr') markExpression(body, readings);
    else if (type === 'FuncCall') {
      const name = (stringsOf(body.funcname).at(-1) ?? '').toLowerCase();
      if (numericAggregates.has(name) && Array.isArray(body.args)) {
        for (const arg of body.args) markColumn(arg, 'number', readings);
      }
    } else if (type === 'ResTarget' && body.name === undefined) {
      const column = columnRefOf(body.val);
      if (column) unnamedOutputs.add(column);
    }
  });
  const edits: TextEdit[] = [];
  walkNodes(parsed.tree, (type, body) => {
    if (type === 'ColumnRef') {
      const edit = pathEdit(parsed, body, relationNames, readings.get(body), unnamedOutputs.has(body));
      if (edit) edits.push(edit);
    } else if (type === 'TypeCast') {
      const edit = instantCastEdit(parsed, body);
      if (edit) edits.push(edit);
    } else if (type === 'RangeVar' && body.schemaname !== undefined && body.schemaname !== 'sensordata') {
      const first = tokenAt(parsed, body.location as number);
      const last = parsed.tokens[first + 2] as { end: number };
      edits.push({
        start: (parsed.tokens[first] as { start: number }).start,
        end: last.end,
        text: 'sensordata.readings',
      });
    }
  });
  return edits.sort((a, b) => a.start - b.start);
}

function markExpression(body: SyntaxNode, readings: Map<SyntaxNode, Reading>): void {
  const operator = stringsOf(body.name).at(-1) ?? '';
  const kind = body.kind as string;
  if (kind === 'AEXPR_OP' && comparisonOperators.has(operator)) {
    const left = literalReading(body.rexpr);
    const right = literalReading(body.lexpr);
    if (left) markColumn(body.lexpr, left, readings);
    if (right) markColumn(body.rexpr, right, readings);
  } else if (kind === 'AEXPR_OP' && arithmeticOperators.has(operator)) {
    markColumn(body.lexpr, 'number', readings);
    markColumn(body.rexpr, 'number', readings);
  } else if (kind === 'AEXPR_LIKE' || kind === 'AEXPR_ILIKE') {
    markColumn(body.lexpr, 'text', readings);
  } else if (kind === 'AEXPR_IN' || kind === 'AEXPR_BETWEEN' || kind === 'AEXPR_NOT_BETWEEN') {
    const items = Array.isArray(body.rexpr) ? body.rexpr : [];
    const reading = items.map(literalReading).find((found) => found !== undefined);
    if (reading) markColumn(body.lexpr, reading, readings);
  }
}

function literalReading(node: unknown): Reading | undefined {
  const constant = (node as { A_Const?: SyntaxNode } | undefined)?.A_Const;
  if (!constant) return undefined;
  if ('ival' in constant || 'fval' in constant) return 'number';
  if ('sval' in constant) return 'text';
  if ('boolval' in constant) return 'boolean';
  return undefined;
}

function markColumn(node: unknown, reading: Reading, readings: Map<SyntaxNode, Reading>): void {
  const column = columnRefOf(node);
  if (column && !readings.has(column)) readings.set(column, reading);
}

function columnRefOf(node: unknown): SyntaxNode | undefined {
  return (node as { ColumnRef?: SyntaxNode } | undefined)?.ColumnRef;
}

function pathEdit(
  parsed: ParsedSql,
  body: SyntaxNode,
  relationNames: ReadonlySet<string>,
  reading: Reading | undefined,
  unnamedOutput: boolean,
): TextEdit | undefined {
  const fields = body.fields as unknown[];
  if (fields.some((field) => !(field as { String?: unknown }).String)) return undefined;
  const names = stringsOf(fields);
  let base: string[];
  let path: string[];
  if (names.length >= 2 && jsonColumns.has(names[0] as string) && !relationNames.has(names[0] as string)) {
    base = names.slice(0, 1);
    path = names.slice(1);
  } else if (
    names.length >= 3 &&
    relationNames.has(names[0] as string) &&
    jsonColumns.has(names[1] as string)
  ) {
    base = names.slice(0, 2);
    path = names.slice(2);
  } else {
    return undefined;
  }
  const first = tokenAt(parsed, body.location as number);
  const last = parsed.tokens[first + 2 * (names.length - 1)] as { end: number };
  const extract = `(${base.map(quoteIdentifier).join('.')} #> ARRAY[${path.map(quoteLiteral).join(', ')}])`;
  const typed = reading ? `sensordata.json_${reading}${extract}` : extract;
  const named = unnamedOutput ? `${typed} AS ${quoteIdentifier(path.at(-1) as string)}` : typed;
  return { start: (parsed.tokens[first] as { start: number }).start, end: last.end, text: named };
}

/**
 * `CAST('2000-01-01T00:00:00.000Z' AS TIMESTAMP)` (the reference's only date syntax; also `TIMESTAMP '…'`
 * and `'…'::timestamp`) becomes a `timestamptz` literal. In the UTC session both denote the same instant,
 * but `timestamptz >= timestamptz` is leakproof, so the organization scope (row-level security, migration
 * 0024; a security barrier before) lets the comparison filter rows while scanning (an index condition)
 * instead of after the join — an order of magnitude on time ranges.
 */
function instantCastEdit(parsed: ParsedSql, body: SyntaxNode): TextEdit | undefined {
  const constant = (body.arg as { A_Const?: SyntaxNode } | undefined)?.A_Const;
  const typeName = body.typeName as SyntaxNode | undefined;
  if (!constant || !('sval' in constant) || !typeName) return undefined;
  const names = stringsOf(typeName.names);
  if (names.at(-1) !== 'timestamp' || typeof typeName.location !== 'number') return undefined;
  const index = tokenAt(parsed, typeName.location);
  const token = parsed.tokens[index] as { start: number; end: number };
  const next = parsed.tokens[index + 1];
  const text = (at: { start: number; end: number } | undefined) =>
    at ? Buffer.from(parsed.text, 'utf8').subarray(at.start, at.end).toString('utf8').toLowerCase() : '';
  if (text(token) !== 'timestamp' || text(next) === 'with' || text(next) === 'without') return undefined;
  return { start: token.start, end: token.end, text: 'timestamptz' };
}

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
