/**
 * One `viam.app.v1.RobotService/Config` call (A1.2–A1.3) returning the config as config-file JSON.
 * Errors are classified: Unknown / InvalidArgument / FailedPrecondition = `malformed` (retrying will
 * not help; logged at ERROR), anything else (timeouts, Unavailable, auth) = `transient`.
 */
import { hostname, networkInterfaces, platform } from 'node:os';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { robotPb } from '@mcloud/protocol/machine';
import { errorMessage } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import { machineServerVersion } from '../version.ts';
import type { CloudConnection } from './cloud-connection.ts';
import { robotConfigToJson } from './robot-config-json.ts';

export class CloudConfigError extends Error {
  readonly kind: 'malformed' | 'transient';
  constructor(kind: 'malformed' | 'transient', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CloudConfigError';
    this.kind = kind;
  }
}

const malformedCodes = new Set([Code.Unknown, Code.InvalidArgument, Code.FailedPrecondition]);

export async function fetchCloudConfig(
  connection: CloudConnection,
  timeoutMs: number,
  gitRevision: string,
  signal: AbortSignal,
): Promise<JsonObject> {
  const client = createClient(robotPb.RobotService, connection.transport);
  try {
    const response = await client.config(
      { id: connection.partId, agentInfo: agentInfo(gitRevision) },
      { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]), timeoutMs },
    );
    if (!response.config)
      throw new CloudConfigError('malformed', 'the cloud answered Config without a config');
    return robotConfigToJson(response.config);
  } catch (error) {
    if (error instanceof CloudConfigError) throw error;
    const connectError = ConnectError.from(error);
    const kind = malformedCodes.has(connectError.code) ? 'malformed' : 'transient';
    throw new CloudConfigError(kind, `RobotService.Config failed: ${errorMessage(connectError)}`, {
      cause: error,
    });
  }
}

function agentInfo(gitRevision: string) {
  const ips = Object.values(networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => entry?.address as string);
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return {
    host: hostname(),
    os: platform(),
    ips,
    version: machineServerVersion,
    gitRevision,
    platform: `${platform()}/${arch}`,
    platformTags: [],
  };
}
