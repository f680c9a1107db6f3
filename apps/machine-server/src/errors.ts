/**
 * The closed set of failure kinds the machine-server reports (gRPC-aligned, like the cloud's domain errors).
 * The machine API layer (ms-api) maps them to ConnectError once; domain code never imports transport types.
 */
export type ErrorCode =
  | 'InvalidArgument'
  | 'NotFound'
  | 'AlreadyExists'
  | 'PermissionDenied'
  | 'Unauthenticated'
  | 'FailedPrecondition'
  | 'Aborted'
  | 'DeadlineExceeded'
  | 'ResourceExhausted'
  | 'Unimplemented'
  | 'Unavailable'
  | 'Internal';

export class MachineError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MachineError';
    this.code = code;
  }
}

export function isMachineError(error: unknown): error is MachineError {
  return error instanceof MachineError;
}

/**
 * A configuration mistake in one field: `path` is the JSON path of the offending field
 * (e.g. `components[2].attributes.width`), the message names the rule and the value.
 */
export function invalidConfig(path: string, problem: string, value?: unknown): MachineError {
  const shown = value === undefined ? '' : ` (got ${describeValue(value)})`;
  return new MachineError('InvalidArgument', `${path}: ${problem}${shown}`);
}

export function notFound(what: string, name: string): MachineError {
  return new MachineError('NotFound', `${what} ${JSON.stringify(name)} not found`);
}

export function unimplemented(what: string): MachineError {
  return new MachineError('Unimplemented', `${what} is not implemented`);
}

/** The message of any thrown value, for logs and status reasons. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function describeValue(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
