import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { createErrorMappingInterceptor } from '@mcloud/rpc-server';
import { type ErrorCode, isMachineError } from '../errors.ts';

/** Every machine ErrorCode is named after the gRPC code it maps to. */
const codeOf = (code: ErrorCode): Code => Code[code];

export type ErrorReporter = (error: unknown, procedure: string) => void;

/**
 * Maps MachineErrors to gRPC status once. Anything else a resource throws is a driver failure, not a
 * bug of the server: it is answered as Unknown with its message (as viam-server does) and reported.
 */
export function toConnectError(error: unknown, procedure: string, report: ErrorReporter): ConnectError {
  if (isMachineError(error)) return new ConnectError(error.message, codeOf(error.code));
  if (error instanceof ConnectError) {
    if (error.code === Code.Internal || error.code === Code.Unknown) report(error, procedure);
    return error;
  }
  report(error, procedure);
  return new ConnectError(error instanceof Error ? error.message : String(error), Code.Unknown);
}

export function createErrorInterceptor(report: ErrorReporter): Interceptor {
  return createErrorMappingInterceptor((error, procedure) => toConnectError(error, procedure, report));
}
