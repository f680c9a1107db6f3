import type { Interceptor, Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { type Credential, createViamClient, type ViamClient } from '@viamrobotics/sdk';

/**
 * How the SDK reaches the cloud:
 * - `grpc-web`: the SDK default (connect-web over Node's global `fetch`, HTTP/1.1). Cannot client-stream.
 * - `grpc`: native gRPC over HTTP/2 (h2c for `http://`), as the SDK's Node.md documents, through
 *   `@connectrpc/connect-node` v1 (the SDK bundles Connect v1, so the transport must be v1 too).
 */
export type SdkTransportKind = 'grpc-web' | 'grpc';

export const sdkTransportKinds: readonly SdkTransportKind[] = ['grpc-web', 'grpc'];

export interface SdkClientOptions {
  /** Base URL of the cloud, e.g. `http://127.0.0.1:8080`. */
  url: string;
  transport: SdkTransportKind;
}

export interface SdkApiKeyClientOptions extends SdkClientOptions {
  apiKeyId: string;
  apiKey: string;
}

export interface SdkPartSecretClientOptions extends SdkClientOptions {
  partId: string;
  secret: string;
}

interface TransportFactoryOptions {
  baseUrl: string;
  interceptors?: Interceptor[];
  [option: string]: unknown;
}

interface ViamGlobal {
  VIAM?: { GRPC_TRANSPORT_FACTORY?: (options: TransportFactoryOptions) => Transport };
}

/** The factory the SDK's Node.md prescribes for native gRPC. */
export function grpcTransportFactory(options: TransportFactoryOptions): Transport {
  return createGrpcTransport({ httpVersion: '2', ...options });
}

/** `createViamClient` with an API key, over the chosen transport. */
export function createSdkClient(options: SdkApiKeyClientOptions): Promise<ViamClient> {
  return createSdkClientWithCredential(options, {
    type: 'api-key',
    authEntity: options.apiKeyId,
    payload: options.apiKey,
  });
}

/** `createViamClient` with a machine part's secret (`robot-secret`), over the chosen transport. */
export function createSdkClientWithPartSecret(options: SdkPartSecretClientOptions): Promise<ViamClient> {
  return createSdkClientWithCredential(options, {
    type: 'robot-secret',
    authEntity: options.partId,
    payload: options.secret,
  });
}

/**
 * The SDK reads `globalThis.VIAM.GRPC_TRANSPORT_FACTORY` synchronously when `createViamClient` starts
 * building its transport (before its first `await`) and keeps the factory for the Authenticate call and
 * the authenticated transport. So the global is set only for the synchronous start of the call and
 * restored right after, which lets clients of both kinds coexist (even concurrently) in one process.
 */
export function createSdkClientWithCredential(
  options: SdkClientOptions,
  credentials: Credential,
): Promise<ViamClient> {
  const restore = setTransportFactory(options.transport);
  try {
    return createViamClient({ serviceHost: options.url, credentials });
  } finally {
    restore();
  }
}

/**
 * Sets `globalThis.VIAM.GRPC_TRANSPORT_FACTORY` for `transport` (native gRPC), or clears it (gRPC-web,
 * the SDK default); returns the function that restores the previous global.
 */
export function setTransportFactory(transport: SdkTransportKind): () => void {
  const global = globalThis as ViamGlobal;
  const previous = global.VIAM;
  if (transport === 'grpc') {
    global.VIAM = { ...previous, GRPC_TRANSPORT_FACTORY: grpcTransportFactory };
  } else if (previous?.GRPC_TRANSPORT_FACTORY) {
    const { GRPC_TRANSPORT_FACTORY: _ignored, ...rest } = previous;
    global.VIAM = rest;
  }
  return () => {
    if (previous === undefined) delete global.VIAM;
    else global.VIAM = previous;
  };
}
