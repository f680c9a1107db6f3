import { type AccessToken, type Credential, RobotClient } from '@viamrobotics/sdk';
import { type SdkTransportKind, setTransportFactory } from './sdk-client.ts';

export interface SdkRobotClientOptions {
  /** The machine API, e.g. `http://localhost:8080` (the SDK only dials hosts containing "local" directly). */
  host: string;
  transport: SdkTransportKind;
  credentials?: Credential | AccessToken;
  /** Sessions are on by default, as for real SDK users. */
  disableSessions?: boolean;
}

let dialing: Promise<unknown> = Promise.resolve();

/**
 * The SDK's robot client dialled directly at `host` (no signaling address, so no WebRTC), one attempt,
 * over gRPC-web (the SDK default) or native gRPC.
 *
 * This is `createRobotClient` without its last line: in SDK 0.61.1 `createRobotClient` dials, then
 * throws "Failed to connect to robot" unless `isConnected()`, which only checks a WebRTC peer
 * connection, so it rejects every successful direct dial. `new RobotClient().dial(conf)` is the same
 * dial (Authenticate, transport, GetOperations probe, sessions) minus that check.
 *
 * The robot client reads the transport factory after several awaits, so the global stays set for the
 * whole dial; dials are serialized so clients of both kinds can be created from one process.
 */
export function createSdkRobotClient(options: SdkRobotClientOptions): Promise<RobotClient> {
  const dial = async () => {
    const restore = setTransportFactory(options.transport);
    try {
      return await new RobotClient().dial({
        host: options.host,
        noReconnect: true,
        dialTimeout: 5_000,
        ...(options.credentials ? { credentials: options.credentials } : {}),
        ...(options.disableSessions ? { disableSessions: true } : {}),
      });
    } finally {
      restore();
    }
  };
  const result = dialing.then(dial, dial);
  dialing = result.catch(() => undefined);
  return result;
}
