/**
 * How the syncer reacts to a failed upload (machine-runtime.md A5.4, wire-protocol.md §2.5):
 * - terminal (InvalidArgument, protobuf decode errors, capture-file format errors): never retried, the
 *   file moves to `failed/`;
 * - offline (Unavailable, and transport failures that never reached the cloud): a long flat wait;
 * - anything else: exponential backoff from 200 ms doubling up to 1 h.
 * Every wait gets jitter (between half and the whole delay) so many files and machines spread out.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { isMachineError } from '../errors.ts';
import { isCaptureFileFormatError } from './capture-file-format.ts';

export type UploadFailureKind = 'terminal' | 'offline' | 'retry';

export interface BackoffPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Wait after an "offline" failure. */
  readonly offlineDelayMs: number;
}

export const defaultBackoffPolicy: BackoffPolicy = {
  initialDelayMs: 200,
  maxDelayMs: 60 * 60 * 1000,
  offlineDelayMs: 60 * 1000,
};

const terminalCodes: ReadonlySet<Code> = new Set([Code.InvalidArgument]);

export function classifyUploadFailure(error: unknown): UploadFailureKind {
  if (isCaptureFileFormatError(error)) return 'terminal';
  if (error instanceof ConnectError) {
    if (terminalCodes.has(error.code)) return 'terminal';
    if (error.code === Code.Unavailable) return 'offline';
    return 'retry';
  }
  if (isMachineError(error) && error.code === 'InvalidArgument') return 'terminal';
  // Not a ConnectError: the request never produced a gRPC status (socket errors and the like).
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return 'offline';
  return 'retry';
}

/**
 * Delay before attempt `failures + 1` after `failures` consecutive failures of one file (≥ 1).
 * `random` is in [0, 1).
 */
export function retryDelayMs(
  kind: Exclude<UploadFailureKind, 'terminal'>,
  failures: number,
  policy: BackoffPolicy = defaultBackoffPolicy,
  random: () => number = Math.random,
): number {
  const base =
    kind === 'offline'
      ? policy.offlineDelayMs
      : Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(40, Math.max(0, failures - 1)));
  return Math.round(base / 2 + (base / 2) * random());
}
