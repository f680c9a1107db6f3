/**
 * Errors a module's resources throw to give the parent a gRPC code (machine-runtime.md appendix
 * §2.7). Anything else reaches the parent as Unknown with its message.
 */
import { Code, ConnectError } from '@connectrpc/connect';

export type ModuleErrorCode =
  | 'InvalidArgument'
  | 'NotFound'
  | 'AlreadyExists'
  | 'FailedPrecondition'
  | 'Unimplemented'
  | 'Unavailable'
  | 'DeadlineExceeded'
  | 'Internal';

export class ModuleError extends Error {
  readonly code: ModuleErrorCode;

  constructor(code: ModuleErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModuleError';
    this.code = code;
  }
}

/** The ConnectError a handler answers for any thrown value. */
export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof ModuleError) return new ConnectError(error.message, Code[error.code]);
  if (error instanceof Error && error.name === 'AbortError')
    return new ConnectError(error.message, Code.Canceled);
  return new ConnectError(error instanceof Error ? error.message : String(error), Code.Unknown);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
