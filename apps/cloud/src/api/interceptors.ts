import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { createErrorMappingInterceptor } from '@mcloud/rpc-server';
import type { Authenticator } from '../domain/auth/authenticator.ts';
import { type ErrorCode, isDomainError, unauthenticated } from '../domain/errors.ts';
import { principalKey } from './context.ts';

const codeOf: Record<ErrorCode, Code> = {
  InvalidArgument: Code.InvalidArgument,
  NotFound: Code.NotFound,
  AlreadyExists: Code.AlreadyExists,
  PermissionDenied: Code.PermissionDenied,
  Unauthenticated: Code.Unauthenticated,
  FailedPrecondition: Code.FailedPrecondition,
  Aborted: Code.Aborted,
  OutOfRange: Code.OutOfRange,
  ResourceExhausted: Code.ResourceExhausted,
  DeadlineExceeded: Code.DeadlineExceeded,
  Unimplemented: Code.Unimplemented,
  Unavailable: Code.Unavailable,
  Internal: Code.Internal,
};

export type ErrorReporter = (error: unknown, procedure: string) => void;

/** Maps domain errors to gRPC status once; anything unexpected is reported and answered as Internal. */
export function createErrorInterceptor(report: ErrorReporter): Interceptor {
  return createErrorMappingInterceptor((error, procedure) => toConnectError(error, procedure, report));
}

export function toConnectError(error: unknown, procedure: string, report: ErrorReporter): ConnectError {
  if (isDomainError(error)) return new ConnectError(error.message, codeOf[error.code]);
  if (error instanceof ConnectError) {
    if (error.code === Code.Internal || error.code === Code.Unknown) report(error, procedure);
    return error;
  }
  report(error, procedure);
  return new ConnectError('internal error', Code.Internal);
}

// Calls that must work without a token.
const publicProcedures = new Set(['proto.rpc.v1.AuthService/Authenticate']);

/** Resolves `authorization: Bearer <token>` to a principal for every call except the public ones. */
export function createAuthInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    const procedure = `${req.service.typeName}/${req.method.name}`;
    if (publicProcedures.has(procedure)) return next(req);
    const header = req.header.get('authorization') ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match?.[1])
      throw unauthenticated('authentication required: send "authorization: Bearer <access token>"');
    req.contextValues.set(principalKey, await authenticator.principalFromToken(match[1]));
    return next(req);
  };
}
