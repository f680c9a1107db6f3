import v8 from 'node:v8';

/**
 * Regular expressions from trigger configurations run on the ingest path of every replica, so a pattern
 * with catastrophic backtracking (`(a+)+$`) must not be able to stall the cloud. V8 ships a linear-time
 * engine (the `l` flag, behind `--enable-experimental-regexp-engine`): patterns are compiled with it, and
 * those it cannot run in linear time (backreferences and some lookarounds) are refused when the
 * configuration is saved. Detected once: if this Node cannot enable the engine, patterns compile with the
 * ordinary engine (evaluation still caps the tested text, see trigger-evals.ts).
 */
// A variable, not a literal: TypeScript does not know the experimental flag.
const linearFlag: string = 'l';

function linearEngineAvailable(): boolean {
  try {
    v8.setFlagsFromString('--enable-experimental-regexp-engine');
    return new RegExp('a', linearFlag).flags.includes(linearFlag);
  } catch {
    return false;
  }
}

export const linearRegExpEngine = linearEngineAvailable();

/** Compiles `pattern` for linear-time matching; throws SyntaxError naming why it cannot be used. */
export function compileLinearRegExp(pattern: string): RegExp {
  return new RegExp(pattern, linearRegExpEngine ? linearFlag : '');
}
