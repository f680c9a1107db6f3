import { loadModule, type ParseResult, parseSync, scanSync } from 'libpg-query';
import { DomainError } from '../../errors.ts';

/**
 * The real PostgreSQL parser (libpg-query, WASM) for user SQL: the parse tree, the token list (for the
 * byte span of a node) and syntax errors as InvalidArgument with PostgreSQL's message and the 1-based
 * character position.
 */

export type SyntaxNode = Record<string, unknown>;

export interface ParsedSql {
  text: string;
  tree: ParseResult;
  /** Token byte spans, in order. */
  tokens: readonly { start: number; end: number }[];
}

let loaded: Promise<void> | undefined;

/** Loads the WASM parser once per process. */
export function loadSqlParser(): Promise<void> {
  loaded ??= loadModule();
  return loaded;
}

export async function parseSql(text: string, field: string): Promise<ParsedSql> {
  await loadSqlParser();
  let tree: ParseResult;
  try {
    tree = parseSync(text);
  } catch (error) {
    const details = (error as { sqlDetails?: { message: string; cursorPosition: number } }).sqlDetails;
    if (!details) throw error;
    throw new DomainError(
      'InvalidArgument',
      `${field}: ${details.message} (at character ${details.cursorPosition + 1})`,
      { cause: error },
    );
  }
  const tokens = scanSync(text).tokens.map((token) => ({ start: token.start, end: token.end }));
  return { text, tree, tokens };
}

/** Index of the token that starts at byte `location`. */
export function tokenAt(parsed: ParsedSql, location: number): number {
  let low = 0;
  let high = parsed.tokens.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const start = (parsed.tokens[middle] as { start: number }).start;
    if (start === location) return middle;
    if (start < location) low = middle + 1;
    else high = middle - 1;
  }
  throw new Error(`no token starts at byte ${location}`);
}

/** Visits every node wrapper (`{NodeType: body}`) depth first; `parent` is the enclosing node's type. */
export function walkNodes(
  value: unknown,
  visit: (type: string, body: SyntaxNode, parentType: string | undefined) => void,
  parentType?: string,
): void {
  if (Array.isArray(value)) {
    for (const item of value) walkNodes(item, visit, parentType);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value as SyntaxNode)) {
    if (isNodeType(key) && child !== null && typeof child === 'object' && !Array.isArray(child)) {
      visit(key, child as SyntaxNode, parentType);
      walkNodes(child, visit, key);
    } else {
      walkNodes(child, visit, parentType);
    }
  }
}

/** Node types are the capitalised keys of the JSON parse tree (fields are lower case). */
export function isNodeType(key: string): boolean {
  const first = key.charCodeAt(0);
  return first >= 65 && first <= 90;
}

/** The `sval`s of a list of `{String: {sval}}` nodes. */
export function stringsOf(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item) => ((item as { String?: { sval?: string } }).String?.sval ?? '') as string);
}
