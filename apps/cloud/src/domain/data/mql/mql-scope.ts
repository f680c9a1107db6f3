import { invalidArgument } from '../../errors.ts';
import { jsonbExpr, quoteText, type SqlExpr, textArrayLiteral } from './mql-sql.ts';

/** What an expression can see: the current document's fields and the document itself. */
export interface ExpressionScope {
  /** `where` for error messages, e.g. `mql_binary[2] ($group)`. */
  where: string;
  /** The top-level field `name` of the current document. */
  field(name: string): SqlExpr;
  /** The whole current document as jsonb (`$$ROOT`, `$$CURRENT`). */
  root(): SqlExpr;
}

/** Splits `a.b.c` into steps; refuses empty steps and `$`-prefixed ones the way MongoDB does. */
export function pathSteps(path: string, where: string): string[] {
  const steps = path.split('.');
  if (path === '' || steps.some((step) => step === '')) {
    throw invalidArgument(where, 'a field path must not be empty or contain an empty step', path);
  }
  if (steps.some((step) => step.startsWith('$'))) {
    throw invalidArgument(where, 'a field path step must not start with $', path);
  }
  return steps;
}

/** Walks `steps` below a value with aggregation-expression semantics (arrays map the step). */
export function descend(base: SqlExpr, steps: readonly string[]): SqlExpr {
  if (steps.length === 0) return base;
  if (base.type !== 'jsonb') return jsonbExpr('NULL::jsonb');
  const path = textArrayLiteral(steps);
  // Through objects only, `->` (or `#>`) is the answer and costs little; arrays on the way need the mapping
  // walk. A short path is a chain of `->`, cheaper than `#>`, which unpacks its text[] on every row; a long
  // one stays `#>` so the planner still inlines the one-line helpers around it (each `->` adds to the cost
  // it compares with a limit before inlining an argument used twice).
  if (steps.some((step) => /^\d+$/.test(step))) return jsonbExpr(`mql_path(${base.sql}, ${path})`);
  const direct =
    steps.length <= 4
      ? `(${base.sql})${steps.map((step) => ` -> ${quoteText(step)}`).join('')}`
      : `${base.sql} #> ${path}`;
  return {
    ...jsonbExpr(`COALESCE(${direct}, mql_path(${base.sql}, ${path}))`),
    cheap: true,
    objectPath: { base: base.sql, steps },
  };
}

/** `$a.b.c` → the value; `$$ROOT`/`$$CURRENT` (optionally with a path) → the document. */
export function resolveFieldPath(reference: string, scope: ExpressionScope): SqlExpr {
  if (reference.startsWith('$$')) {
    const [variable, ...rest] = reference.slice(2).split('.');
    if (variable === 'ROOT' || variable === 'CURRENT') {
      return descend(scope.root(), rest.length ? pathSteps(rest.join('.'), scope.where) : []);
    }
    throw invalidArgument(scope.where, `unsupported variable $$${variable}`);
  }
  const [head, ...rest] = pathSteps(reference.slice(1), scope.where);
  return descend(scope.field(head as string), rest);
}
