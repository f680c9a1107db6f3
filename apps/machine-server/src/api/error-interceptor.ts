import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { type ErrorCode, isMachineError } from '../errors.ts';

const codeOf: Record<ErrorCode, Code> = {
  InvalidArgument: Code.InvalidArgument,
  NotFound: Code.NotFound,
  AlreadyExists: Code.AlreadyExists,
  PermissionDenied: Code.PermissionDenied,
  Unauthenticated: Code.Unauthenticated,
  FailedPrecondition: Code.FailedPrecondition,
  Aborted: Code.Aborted,
  DeadlineExceeded: Code.DeadlineExceeded,
  ResourceExhausted: Code.ResourceExhausted,
  Unimplemented: Code.Unimplemented,
  Unavailable: Code.Unavailable,
  Internal: Code.Internal,
};

export type ErrorReporter = (error: unknown, procedure: string) => void;

/**
 * Maps MachineErrors to gRPC status once. Anything else a resource throws is a driver failure, not a
 * bug of the server: it is answered as Unknown with its message (as viam-server does) and reported.
 */
export function toConnectError(error: unknown, procedure: string, report: ErrorReporter): ConnectError {
  if (isMachineError(error)) return new ConnectError(error.message, codeOf[error.code]);
  if (error instanceof ConnectError) {
    if (error.code === Code.Internal || error.code === Code.Unknown) report(error, procedure);
    return error;
  }
  report(error, procedure);
  return new ConnectError(error instanceof Error ? error.message : String(error), Code.Unknown);
}

export function createErrorInterceptor(report: ErrorReporter): Interceptor {
  return (next) => async (req) => {
    const procedure = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      return res.stream ? { ...res, message: mapStreamErrors(res.message, procedure, report) } : res;
    } catch (error) {
      throw toConnectError(error, procedure, report);
    }
  };
}

async function* mapStreamErrors<T>(messages: AsyncIterable<T>, procedure: string, report: ErrorReporter) {
  try {
    yield* messages;
  } catch (error) {
    throw toConnectError(error, procedure, report);
  }
}
