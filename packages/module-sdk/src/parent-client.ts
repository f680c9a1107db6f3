/**
 * The module's connection back to its parent (machine-runtime.md A3.4, appendix §2.3, §2.7, §3):
 * `RobotService.ResourceNames` to check the connection and find dependencies, one `Log` call per
 * entry (5 s each, in order; on failure the entry goes to stdout/stderr), and the transport the
 * clients of dependencies use.
 */

import { hostname } from 'node:os';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { type Client, createClient, type Transport } from '@connectrpc/connect';
import { machineRobotPb } from '@mcloud/protocol/machine';
import { consoleSink, type LogRecord } from './logger.ts';
import type { ResourceName } from './resource-name.ts';
import { createSocketTransport } from './socket-transport.ts';

export const sdkVersion = '0.1.0';
const logCallTimeoutMs = 5000;

export interface ParentClient {
  readonly address: string;
  readonly transport: Transport;
  resourceNames(signal?: AbortSignal): Promise<ResourceName[]>;
  /** Queues one entry; entries are sent one call each, in order. */
  log(record: LogRecord): void;
  /** Resolves when every queued entry was sent (or fell back to the console). */
  flush(): Promise<void>;
  close(): void;
}

export async function connectToParent(
  address: string,
  moduleName: string,
  signal: AbortSignal,
): Promise<ParentClient> {
  const socket = createSocketTransport(address, {
    modname: moduleName,
    viam_client: `typescript;v${sdkVersion};v0.1.512`,
  });
  const robot: Client<typeof machineRobotPb.RobotService> = createClient(
    machineRobotPb.RobotService,
    socket.transport,
  );
  const resourceNames = async (callSignal?: AbortSignal) => {
    const response = await robot.resourceNames({}, callSignal ? { signal: callSignal } : {});
    return response.resources.map((resource) => ({
      api: { namespace: resource.namespace, type: resource.type, subtype: resource.subtype },
      name: resource.name,
    }));
  };
  try {
    await resourceNames(signal);
  } catch (error) {
    socket.close();
    throw error;
  }
  const host = hostname();
  let queue = Promise.resolve();
  return {
    address,
    transport: socket.transport,
    resourceNames,
    log(record) {
      queue = queue.then(async () => {
        try {
          await robot.log(
            {
              logs: [
                {
                  host,
                  level: record.level,
                  time: timestampFromDate(record.time),
                  loggerName: record.loggerName,
                  message: record.message,
                  fields: Object.entries(record.fields).map(([key, value]) => ({
                    Key: key,
                    Type: 23,
                    Interface: value,
                  })),
                },
              ],
            },
            { timeoutMs: logCallTimeoutMs },
          );
        } catch {
          consoleSink(record);
        }
      });
    },
    flush: () => queue,
    close: () => socket.close(),
  };
}
