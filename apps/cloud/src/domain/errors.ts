/**
 * The closed set of failure kinds the domain reports. Names follow gRPC status codes so the API layer
 * maps them once (see api/error-interceptor.ts); domain code never imports transport types.
 */
export type ErrorCode =
  | 'InvalidArgument'
  | 'NotFound'
  | 'AlreadyExists'
  | 'PermissionDenied'
  | 'Unauthenticated'
  | 'FailedPrecondition'
  | 'Aborted'
  | 'OutOfRange'
  | 'ResourceExhausted'
  | 'DeadlineExceeded'
  | 'Unimplemented'
  | 'Unavailable'
  | 'Internal';

export class DomainError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DomainError';
    this.code = code;
  }
}

export function isDomainError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}

/** A client mistake in one field: the message names the field, the offending value and the rule. */
export function invalidArgument(field: string, problem: string, value?: unknown): DomainError {
  const shown = value === undefined ? '' : ` (got ${describeValue(value)})`;
  return new DomainError('InvalidArgument', `${field}: ${problem}${shown}`);
}

export function notFound(what: string, id: string): DomainError {
  return new DomainError('NotFound', `${what} ${JSON.stringify(id)} not found`);
}

export function permissionDenied(message = 'permission denied'): DomainError {
  return new DomainError('PermissionDenied', message);
}

export function unauthenticated(message = 'authentication required'): DomainError {
  return new DomainError('Unauthenticated', message);
}

export function failedPrecondition(message: string): DomainError {
  return new DomainError('FailedPrecondition', message);
}

function describeValue(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
