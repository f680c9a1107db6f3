import { DomainError } from '../../errors.ts';
import {
  allowedCastTypes,
  allowedFunctions,
  allowedNodeTypes,
  describeNodeType,
  sensorDataFunctions,
} from './sql-allow-list.ts';
import { type ParsedSql, type SyntaxNode, stringsOf, walkNodes } from './sql-syntax-tree.ts';

/**
 * Admits exactly one SELECT (set operations, CTEs, subqueries, joins included) that reads only
 * `readings` / `sensordata.readings` (or its own CTEs) and calls only allow-listed functions and casts.
 * Refusals are InvalidArgument naming what was refused. Returns the names relations go by in the query
 * (tables, aliases, CTEs), which the dotted-path rewrite needs.
 */
export function validateUserSelect(parsed: ParsedSql, field: string): Set<string> {
  const statements = parsed.tree.stmts ?? [];
  if (statements.length === 0) throw refused(field, 'must contain a SELECT statement');
  if (statements.length > 1) {
    throw refused(
      field,
      `must contain exactly one statement (got ${statements.length}); multiple statements are not allowed`,
    );
  }
  const statement = statements[0]?.stmt as SyntaxNode | undefined;
  const statementType = statement ? Object.keys(statement)[0] : undefined;
  if (statementType !== 'SelectStmt') {
    throw refused(
      field,
      `only SELECT statements are allowed (got ${describeNodeType(statementType ?? 'nothing')})`,
    );
  }
  const cteNames = new Set<string>();
  const relationNames = new Set<string>(['readings']);
  walkNodes(parsed.tree, (type, body) => {
    if (type === 'CommonTableExpr' && typeof body.ctename === 'string') cteNames.add(body.ctename);
  });
  walkNodes(parsed.tree, (type, body) => {
    if (!allowedNodeTypes.has(type)) throw refused(field, `${describeNodeType(type)} is not allowed`);
    switch (type) {
      case 'SelectStmt':
        if (body.intoClause) throw refused(field, 'SELECT INTO is not allowed');
        if (body.lockingClause) throw refused(field, 'locking clauses (FOR UPDATE/SHARE) are not allowed');
        break;
      case 'CommonTableExpr': {
        const query = body.ctequery as SyntaxNode | undefined;
        const queryType = query ? Object.keys(query)[0] : undefined;
        if (queryType !== 'SelectStmt') {
          throw refused(
            field,
            `WITH ${String(body.ctename)}: only SELECT is allowed (got ${describeNodeType(queryType ?? 'nothing')})`,
          );
        }
        break;
      }
      case 'RangeVar':
        checkRelation(field, body, cteNames);
        relationNames.add(aliasOf(body) ?? String(body.relname));
        break;
      case 'RangeSubselect':
      case 'RangeFunction': {
        const alias = aliasOf(body);
        if (alias) relationNames.add(alias);
        break;
      }
      case 'FuncCall':
        checkFunction(field, stringsOf(body.funcname));
        break;
      case 'TypeName':
        checkType(field, stringsOf(body.names));
        break;
      // Their type name is an unwrapped TypeName body.
      case 'TypeCast':
      case 'ColumnDef':
        checkType(field, stringsOf((body.typeName as SyntaxNode | undefined)?.names));
        break;
      case 'SubLink':
        if (body.operName) checkOperator(field, stringsOf(body.operName));
        break;
      case 'A_Expr':
        checkOperator(field, stringsOf(body.name));
        break;
    }
  });
  for (const name of cteNames) relationNames.add(name);
  return relationNames;
}

function checkRelation(field: string, body: SyntaxNode, cteNames: Set<string>): void {
  const name = String(body.relname);
  const schema = body.schemaname === undefined ? undefined : String(body.schemaname);
  const shown = [body.catalogname, schema, name].filter((part) => part !== undefined).join('.');
  const readingsView = name === 'readings' && (schema === undefined || schema.toLowerCase() === 'sensordata');
  const cte = schema === undefined && cteNames.has(name);
  if (body.catalogname !== undefined || !(readingsView || cte)) {
    throw refused(
      field,
      `relation ${JSON.stringify(shown)} is not available; query the table readings (also sensorData.readings)`,
    );
  }
}

function checkFunction(field: string, names: string[]): void {
  const name = (names.at(-1) ?? '').toLowerCase();
  const schema = names.length > 1 ? names.slice(0, -1).join('.').toLowerCase() : undefined;
  const allowed =
    names.length <= 2 &&
    (schema === undefined ||
      schema === 'pg_catalog' ||
      (schema === 'sensordata' && sensorDataFunctions.has(name))) &&
    allowedFunctions.has(name);
  if (!allowed) throw refused(field, `function ${names.join('.')} is not allowed`);
}

function checkType(field: string, names: string[]): void {
  const name = (names.at(-1) ?? '').toLowerCase();
  const schema = names.length > 1 ? names.slice(0, -1).join('.').toLowerCase() : undefined;
  if (names.length > 2 || (schema !== undefined && schema !== 'pg_catalog') || !allowedCastTypes.has(name)) {
    throw refused(field, `type ${names.join('.')} is not allowed`);
  }
}

function checkOperator(field: string, names: string[]): void {
  if (names.length > 1 && names.slice(0, -1).join('.').toLowerCase() !== 'pg_catalog') {
    throw refused(field, `operator ${names.join('.')} is not allowed`);
  }
}

function aliasOf(body: SyntaxNode): string | undefined {
  const alias = body.alias as { aliasname?: string } | undefined;
  return alias?.aliasname;
}

function refused(field: string, problem: string): DomainError {
  return new DomainError('InvalidArgument', `${field}: ${problem}`);
}
