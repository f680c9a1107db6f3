/**
 * The parent's connection to a started module (machine-runtime.md A3.2, appendix §2.3): wait for the
 * socket file (every 100 ms; the process exiting first is "exited too quickly"), then `Ready` with a
 * 3 s deadline per attempt, retried after 200 ms on Unavailable / ResourceExhausted / DeadlineExceeded
 * / Canceled or `ready=false`, all within the start-up timeout (5 min). The handler map says which
 * (API, model) pairs the module serves.
 */
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { createSocketTransport } from '@mcloud/module-sdk';
import { modulePb } from '@mcloud/protocol/machine';
import { errorMessage, MachineError } from '../errors.ts';
import { type Api, createApi, type Model, parseModel } from '../resources/resource-name.ts';
import { describeExit, type ModuleProcess } from './module-process.ts';

export const readyAttemptTimeoutMs = 3000;
const retryableReadyCodes = new Set([
  Code.Unavailable,
  Code.ResourceExhausted,
  Code.DeadlineExceeded,
  Code.Canceled,
]);

export interface ModuleHandler {
  readonly api: Api;
  readonly protoService: string;
  readonly models: readonly Model[];
}

export interface ModuleConnection {
  readonly transport: Transport;
  readonly client: Client<typeof modulePb.ModuleService>;
  readonly handlers: readonly ModuleHandler[];
  close(): void;
}

export interface ConnectModuleOptions {
  readonly moduleName: string;
  readonly address: string;
  /** Whether `address` is a unix socket whose file must appear first. */
  readonly waitForSocketFile: boolean;
  readonly parentAddress: string;
  readonly process: ModuleProcess;
  readonly startupTimeoutMs: number;
  readonly signal: AbortSignal;
}

export async function connectModule(options: ConnectModuleOptions): Promise<ModuleConnection> {
  const deadline = AbortSignal.any([options.signal, AbortSignal.timeout(options.startupTimeoutMs)]);
  const exitedEarly = () =>
    new MachineError(
      'FailedPrecondition',
      `module ${options.moduleName} exited too quickly after attempted startup (${describeExit(
        options.process.exitStatus() ?? { code: null, signal: null },
      )})`,
    );
  const timedOut = () =>
    new MachineError(
      'DeadlineExceeded',
      `module ${options.moduleName} did not become ready within ${options.startupTimeoutMs} ms`,
    );
  if (options.waitForSocketFile) {
    while (!(await isSocket(options.address))) {
      if (options.process.exitStatus()) throw exitedEarly();
      if (deadline.aborted) throw options.signal.aborted ? options.signal.reason : timedOut();
      await sleep(100);
    }
  }
  const socket = createSocketTransport(options.address);
  const client = createClient(modulePb.ModuleService, socket.transport);
  try {
    for (;;) {
      if (options.process.exitStatus()) throw exitedEarly();
      if (deadline.aborted) throw options.signal.aborted ? options.signal.reason : timedOut();
      try {
        const response = await client.ready(
          { parentAddress: options.parentAddress, rawParentAddress: options.parentAddress, webrtcOffer: '' },
          { signal: AbortSignal.any([deadline, AbortSignal.timeout(readyAttemptTimeoutMs)]) },
        );
        if (response.ready) {
          return {
            transport: socket.transport,
            client,
            handlers: handlersFromProto(options.moduleName, response.handlermap),
            close: () => socket.close(),
          };
        }
      } catch (error) {
        const code = ConnectError.from(error).code;
        if (!retryableReadyCodes.has(code)) {
          throw new MachineError(
            'FailedPrecondition',
            `module ${options.moduleName}: Ready failed: ${errorMessage(error)}`,
            {
              cause: error,
            },
          );
        }
      }
      await sleep(200);
    }
  } catch (error) {
    socket.close();
    throw error;
  }
}

function handlersFromProto(moduleName: string, map: modulePb.HandlerMap | undefined): ModuleHandler[] {
  return (map?.handlers ?? []).map((handler, index) => {
    const subtype = handler.subtype?.subtype;
    if (!subtype?.namespace || !subtype.type || !subtype.subtype) {
      throw new MachineError(
        'InvalidArgument',
        `module ${moduleName}: handlermap.handlers[${index}].subtype is incomplete`,
      );
    }
    return {
      api: createApi(subtype.namespace, subtype.type, subtype.subtype),
      protoService: handler.subtype?.protoService ?? '',
      models: handler.models.map((model, m) =>
        parseModel(model, `module ${moduleName} handlermap.handlers[${index}].models[${m}]`),
      ),
    };
  });
}

async function isSocket(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isSocket();
  } catch {
    return false;
  }
}
