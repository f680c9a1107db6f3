import assert from 'node:assert/strict';
import { Code } from '@connectrpc/connect';

export { Code };

/**
 * What the SDK surfaces for a failed call. The SDK's bundled Connect (gRPC-web) and connect-node v1 (gRPC) are
 * different copies of `ConnectError`, so tests look at the fields, never at `instanceof`.
 */
export interface SdkRpcError {
  code: Code;
  /** The server's message without Connect's `[code]` prefix. */
  rawMessage: string;
  message: string;
}

export function isSdkRpcError(error: unknown): error is SdkRpcError {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { rawMessage?: unknown }).rawMessage === 'string'
  );
}

export function codeName(code: Code): string {
  return Code[code] ?? String(code);
}

/** Awaits `promise`, asserts it fails with a ConnectError whose code is (one of) `expected`; returns the error. */
export async function expectRpcError(
  promise: Promise<unknown>,
  expected: Code | readonly Code[],
  context = '',
): Promise<SdkRpcError> {
  const codes = Array.isArray(expected) ? expected : [expected as Code];
  let outcome: unknown;
  try {
    outcome = await promise;
  } catch (error) {
    if (!isSdkRpcError(error)) throw error;
    assert.ok(
      codes.includes(error.code),
      `${context}expected ${codes.map(codeName).join(' or ')}, got ${codeName(error.code)}: ${error.rawMessage}`,
    );
    return error;
  }
  assert.fail(
    `${context}expected ${codes.map(codeName).join(' or ')}, but the call succeeded: ${safeJson(outcome)}`,
  );
}

/** The outcome of a call reduced to what a caller can observe: success or `{code, message}`. */
export type CallOutcome = { ok: true } | { ok: false; code: string; message: string };

/**
 * Runs `call` and reduces the result to its observable shape, with every occurrence of the given IDs replaced
 * by `<id>` so that answers for different IDs can be compared.
 */
export async function callOutcome(
  call: () => Promise<unknown>,
  ids: readonly string[],
): Promise<CallOutcome> {
  try {
    await call();
    return { ok: true };
  } catch (error) {
    if (!isSdkRpcError(error)) throw error;
    let message = error.rawMessage;
    for (const id of ids) if (id) message = message.split(id).join('<id>');
    return { ok: false, code: codeName(error.code), message };
  }
}

function safeJson(value: unknown): string {
  try {
    return (
      JSON.stringify(value, (_key, inner) => (typeof inner === 'bigint' ? inner.toString() : inner))?.slice(
        0,
        300,
      ) ?? String(value)
    );
  } catch {
    return String(value);
  }
}
