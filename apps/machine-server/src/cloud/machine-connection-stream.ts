/**
 * The machine side of `mcloud.machine.v1.MachineConnectionService/Connect` (packages/protocol
 * proto-own): one long-lived stream that keeps the part online and delivers `config_changed` (→ fetch
 * the config at once) and `restart_requested` (→ ask NeedsRestart) pushes. Sends `hello`, then a
 * heartbeat every `welcome.heartbeat_interval`; treats `offline_after` of silence as a dead stream;
 * reconnects with backoff 1 s doubling to 30 s until stopped. Clouds without the service
 * (Unimplemented) are retried at the 30 s ceiling and the poll carries on alone.
 */
import { create } from '@bufbuild/protobuf';
import { durationMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { machineConnectionPb } from '@mcloud/protocol/machine';
import { sleep } from '../concurrency.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import { machineServerVersion } from '../version.ts';
import type { CloudConnection } from './cloud-connection.ts';

export interface MachineConnectionStreamOptions {
  readonly connection: CloudConnection;
  readonly logger: Logger;
  /** Revision of the running config, sent in `hello`. */
  readonly currentRevision: () => string;
  readonly onConfigChanged: (revision: string, changedAt: Date | undefined) => void;
  readonly onRestartRequested: () => void;
  /** Called with true when a stream is welcomed, false when it ends. */
  readonly onConnectedChange?: (connected: boolean) => void;
}

export interface MachineConnectionStream {
  isConnected(): boolean;
  stop(): Promise<void>;
}

type ConnectRequest = machineConnectionPb.ConnectRequest;

export function startMachineConnectionStream(
  options: MachineConnectionStreamOptions,
): MachineConnectionStream {
  const { connection, logger } = options;
  const client = createClient(machineConnectionPb.MachineConnectionService, connection.transport);
  const stopping = new AbortController();
  let connected = false;

  const setConnected = (value: boolean) => {
    if (connected === value) return;
    connected = value;
    options.onConnectedChange?.(value);
  };

  const runOnce = async (): Promise<boolean> => {
    const streamAbort = new AbortController();
    const signal = AbortSignal.any([stopping.signal, streamAbort.signal]);
    const outbox: ConnectRequest[] = [];
    let wake: (() => void) | undefined;
    const send = (message: ConnectRequest) => {
      outbox.push(message);
      wake?.();
    };
    async function* requests(): AsyncGenerator<ConnectRequest> {
      while (!signal.aborted) {
        const next = outbox.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
        wake = undefined;
      }
    }
    send(
      create(machineConnectionPb.ConnectRequestSchema, {
        message: {
          case: 'hello',
          value: {
            partId: connection.partId,
            configRevision: options.currentRevision(),
            version: machineServerVersion,
          },
        },
      }),
    );
    let heartbeat: NodeJS.Timeout | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    let offlineAfterMs = 30_000;
    const armWatchdog = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        logger.warn('machine connection silent; reconnecting', { offline_after_ms: offlineAfterMs });
        streamAbort.abort();
      }, offlineAfterMs);
    };
    let welcomed = false;
    try {
      armWatchdog();
      for await (const response of client.connect(requests(), { signal })) {
        armWatchdog();
        const message = response.message;
        if (message.case === 'welcome') {
          welcomed = true;
          const interval = message.value.heartbeatInterval
            ? durationMs(message.value.heartbeatInterval)
            : 10_000;
          offlineAfterMs = message.value.offlineAfter ? durationMs(message.value.offlineAfter) : interval * 3;
          armWatchdog();
          heartbeat = setInterval(
            () =>
              send(
                create(machineConnectionPb.ConnectRequestSchema, {
                  message: {
                    case: 'heartbeat',
                    value: { sentAt: { seconds: BigInt(Math.floor(Date.now() / 1000)), nanos: 0 } },
                  },
                }),
              ),
            Math.max(100, interval),
          );
          setConnected(true);
          logger.info('machine connection open', { heartbeat_interval_ms: interval });
        } else if (message.case === 'configChanged') {
          const value = message.value;
          const changedAt = value.changedAt
            ? new Date(Number(value.changedAt.seconds) * 1000 + value.changedAt.nanos / 1e6)
            : undefined;
          options.onConfigChanged(value.revision, changedAt);
        } else if (message.case === 'restartRequested') {
          options.onRestartRequested();
        }
      }
    } catch (error) {
      if (!stopping.signal.aborted) {
        const code = ConnectError.from(error).code;
        const level = code === Code.Unimplemented ? 'debug' : 'info';
        logger[level]('machine connection ended', { error: errorMessage(error) });
        if (code === Code.Unimplemented) return false;
      }
    } finally {
      clearInterval(heartbeat);
      clearTimeout(watchdog);
      streamAbort.abort();
      setConnected(false);
    }
    return welcomed;
  };

  const loop = (async () => {
    let backoffMs = 1000;
    while (!stopping.signal.aborted) {
      const welcomed = await runOnce();
      if (stopping.signal.aborted) break;
      backoffMs = welcomed ? 1000 : Math.min(backoffMs * 2, 30_000);
      await sleep(backoffMs, stopping.signal);
    }
  })();

  return {
    isConnected: () => connected,
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
