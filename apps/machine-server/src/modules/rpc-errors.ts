/** Errors answered by a module, as MachineErrors (the machine API maps them back to the same code). */
import { Code, ConnectError } from '@connectrpc/connect';
import { type ErrorCode, MachineError } from '../errors.ts';

const codes: Partial<Record<Code, ErrorCode>> = {
  [Code.InvalidArgument]: 'InvalidArgument',
  [Code.NotFound]: 'NotFound',
  [Code.AlreadyExists]: 'AlreadyExists',
  [Code.PermissionDenied]: 'PermissionDenied',
  [Code.Unauthenticated]: 'Unauthenticated',
  [Code.FailedPrecondition]: 'FailedPrecondition',
  [Code.Aborted]: 'Aborted',
  [Code.DeadlineExceeded]: 'DeadlineExceeded',
  [Code.ResourceExhausted]: 'ResourceExhausted',
  [Code.Unimplemented]: 'Unimplemented',
  [Code.Unavailable]: 'Unavailable',
  [Code.Internal]: 'Internal',
};

/** `prefix` says where it came from (e.g. `module counter: AddResource`). Unknown stays a plain Error. */
export function errorFromModule(error: unknown, prefix: string): Error {
  if (error instanceof MachineError) return error;
  const connect = ConnectError.from(error);
  const message = `${prefix}: ${connect.rawMessage}`;
  const code = codes[connect.code];
  return code ? new MachineError(code, message, { cause: error }) : new Error(message, { cause: error });
}

export function isUnimplemented(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.Unimplemented;
}
