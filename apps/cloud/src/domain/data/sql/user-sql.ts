import { DomainError } from '../../errors.ts';
import { dottedPathEdits, type TextEdit } from './sql-dotted-paths.ts';
import { parseSql } from './sql-syntax-tree.ts';
import { validateUserSelect } from './sql-validation.ts';

/**
 * A user's SQL made ready to run over the organization's `readings`: backtick identifiers (reference
 * dialect) become double-quoted ones, the text is parsed by PostgreSQL's parser, admitted (one SELECT,
 * allow-listed relations, functions and casts — see sql-validation.ts), rewritten for the dotted-path
 * style (sql-dotted-paths.ts), and the result parsed and admitted again (the rewrite must not produce
 * anything the check would refuse). `mapPosition` maps an error position in the prepared text back to
 * the user's text.
 */

export interface PreparedSql {
  sql: string;
  mapPosition: (position: number) => number;
}

export const maxSqlLength = 100_000;

export async function prepareUserSql(text: string, field: string): Promise<PreparedSql> {
  if (text.trim() === '') throw new DomainError('InvalidArgument', `${field}: is required`);
  if (text.length > maxSqlLength) {
    throw new DomainError(
      'InvalidArgument',
      `${field}: must be at most ${maxSqlLength} characters (got ${text.length})`,
    );
  }
  const original = await parseSql(backticksToDoubleQuotes(text), field);
  const relationNames = validateUserSelect(original, field);
  const statement = original.tree.stmts?.[0] as { stmt_location?: number; stmt_len?: number };
  const source = Buffer.from(original.text, 'utf8');
  const statementStart = statement.stmt_location ?? 0;
  const statementEnd = statement.stmt_len ? statementStart + statement.stmt_len : source.length;
  const edits = dottedPathEdits(original, relationNames);
  const prepared = applyEdits(source, statementStart, statementEnd, edits);
  const checked = await parseSql(prepared, field);
  const again = validateUserSelect(checked, field);
  if (dottedPathEdits(checked, again).length > 0) {
    throw new Error(`dotted-path rewrite is not idempotent for: ${prepared}`);
  }
  return { sql: prepared, mapPosition: createPositionMap(source, prepared, statementStart, edits) };
}

/** Replaces `ident` by "ident" outside strings, quoted identifiers and comments (same length). */
export function backticksToDoubleQuotes(text: string): string {
  if (!text.includes('`')) return text;
  const out = [...text];
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    const next = text[i + 1];
    if (char === "'" || char === '"') {
      i = text.indexOf(char, i + 1);
      while (i !== -1 && text[i + 1] === char) i = text.indexOf(char, i + 2);
      if (i === -1) break;
    } else if (char === '-' && next === '-') {
      i = text.indexOf('\n', i);
      if (i === -1) break;
    } else if (char === '/' && next === '*') {
      i = text.indexOf('*/', i + 2);
      if (i === -1) break;
      i += 1;
    } else if (char === '$') {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i))?.[0];
      if (tag) {
        i = text.indexOf(tag, i + tag.length);
        if (i === -1) break;
        i += tag.length - 1;
      }
    } else if (char === '`') {
      const close = text.indexOf('`', i + 1);
      if (close === -1) break;
      if (text.slice(i + 1, close).includes('"')) {
        throw new DomainError('InvalidArgument', `sql_query: a backtick identifier may not contain '"'`);
      }
      out[i] = '"';
      out[close] = '"';
      i = close;
    }
    i += 1;
  }
  return out.join('');
}

function applyEdits(source: Buffer, start: number, end: number, edits: readonly TextEdit[]): string {
  const parts: Buffer[] = [];
  let at = start;
  for (const edit of edits) {
    parts.push(source.subarray(at, edit.start), Buffer.from(edit.text, 'utf8'));
    at = edit.end;
  }
  parts.push(source.subarray(at, end));
  return Buffer.concat(parts).toString('utf8');
}

/** 1-based character position in the prepared text → 1-based character position in the user's text. */
function createPositionMap(
  source: Buffer,
  prepared: string,
  statementStart: number,
  edits: readonly TextEdit[],
): (position: number) => number {
  return (position) => {
    const preparedBytes = Buffer.byteLength([...prepared].slice(0, position - 1).join(''), 'utf8');
    let originalByte = statementStart + preparedBytes;
    let shift = 0;
    for (const edit of edits) {
      const editStartInPrepared = edit.start - statementStart + shift;
      const newLength = Buffer.byteLength(edit.text, 'utf8');
      if (preparedBytes < editStartInPrepared) break;
      if (preparedBytes < editStartInPrepared + newLength) {
        originalByte = edit.start;
        shift = Number.NaN;
        break;
      }
      shift += newLength - (edit.end - edit.start);
    }
    if (!Number.isNaN(shift)) originalByte = statementStart + preparedBytes - shift;
    return [...source.subarray(0, originalByte).toString('utf8')].length + 1;
  };
}
