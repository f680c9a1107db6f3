import { DomainError, type ErrorCode } from '../../errors.ts';

/**
 * A PostgreSQL error raised by a user's query → a DomainError the user can act on. SQLSTATE classes:
 * 57014 (statement timeout) → DeadlineExceeded with the limit; 53/54 (out of memory, too complex) →
 * ResourceExhausted; 42501 and 25006 (privilege, read-only transaction) → PermissionDenied; 42 (syntax,
 * unknown column/function/type), 22 (bad data: cast, division by zero), 21, 2202E… → InvalidArgument
 * with PostgreSQL's message and the character position in the user's text. Anything else is rethrown
 * (a bug or an outage, answered as Internal/Unavailable upstream).
 */

export interface QueryErrorContext {
  timeoutMs: number;
  /** Characters in front of the user's text in the statement PostgreSQL saw. */
  positionOffset: number;
  sql: string;
  mapPosition?: ((position: number) => number) | undefined;
}

interface PostgresError {
  code?: string;
  message: string;
  position?: string;
  detail?: string;
  hint?: string;
}

const invalidClasses = new Set(['42', '22', '21', '0A', '2F', '39', '3F', '44']);

export function queryErrorFromPostgres(error: unknown, context: QueryErrorContext): unknown {
  const pgError = error as PostgresError;
  const code = typeof pgError?.code === 'string' ? pgError.code : undefined;
  if (!code || code.length !== 5) return error;
  if (code === '57014') {
    return new DomainError('DeadlineExceeded', `query exceeded the time limit of ${context.timeoutMs} ms`, {
      cause: error,
    });
  }
  let kind: ErrorCode | undefined;
  if (code === '42501' || code === '25006') kind = 'PermissionDenied';
  else if (code.startsWith('53') || code.startsWith('54')) kind = 'ResourceExhausted';
  else if (invalidClasses.has(code.slice(0, 2))) kind = 'InvalidArgument';
  if (!kind) return error;
  return new DomainError(kind, describe(pgError, context), { cause: error });
}

function describe(error: PostgresError, context: QueryErrorContext): string {
  let message = error.message;
  const position = Number(error.position);
  if (Number.isInteger(position) && position > context.positionOffset) {
    const inUserText = position - context.positionOffset;
    const shown = context.mapPosition ? context.mapPosition(inUserText) : inUserText;
    message += ` (at character ${shown})`;
  }
  if (error.detail) message += `; ${error.detail}`;
  if (error.hint) message += `; hint: ${error.hint}`;
  return message;
}
