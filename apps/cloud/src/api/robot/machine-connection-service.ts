import type { MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { machineConnectionPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import { DomainError, invalidArgument } from '../../domain/errors.ts';
import type { LiveStreamMessage, LiveStreamSession } from '../../domain/machines/live-streams.ts';
import { placementOf, requireMachinePart } from '../../domain/machines/machine-access.ts';
import { fleetContextOf } from '../app/fleet-messages.ts';
import { principalOf } from '../context.ts';

type Handlers = ServiceImpl<typeof machineConnectionPb.MachineConnectionService>;
type Response = MessageInitShape<typeof machineConnectionPb.ConnectResponseSchema>;

function toResponse(message: LiveStreamMessage): Response {
  switch (message.kind) {
    case 'heartbeat':
      return { message: { case: 'heartbeat', value: { sentAt: timestampFromMs(message.atMs) } } };
    case 'config-changed':
      return {
        message: {
          case: 'configChanged',
          value: { revision: message.revision, changedAt: timestampFromMs(message.changedAtMs) },
        },
      };
    case 'restart-requested':
      return {
        message: { case: 'restartRequested', value: { requestedAt: timestampFromMs(message.requestedAtMs) } },
      };
  }
}

/**
 * `mcloud.machine.v1.MachineConnectionService/Connect` (semantics in machine_connection.proto): hello →
 * welcome, then heartbeats both ways and pushes of "config changed" / "restart requested" until either side
 * ends the stream. Machine credentials as for RobotService.Log (the part's secret, or an API key with
 * operator on the machine).
 */
export function machineConnectionHandlers(deps: CloudDeps): Partial<Handlers> {
  const ctx = fleetContextOf(deps);
  return {
    async *connect(requests, context) {
      const principal = principalOf(context);
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done || first.value.message.case !== 'hello') {
        throw invalidArgument('hello', 'the first message of Connect must be hello');
      }
      const hello = first.value.message.value;
      const part = await requireMachinePart(ctx, principal, hello.partId, 'operator', 'hello.part_id');
      const settings = deps.config.machineConnection;
      const session: LiveStreamSession = await deps.machines.streams.open(placementOf(part));
      // The machine's side: every message counts as contact; its end (or an error) ends the session.
      const machineSide: { state: 'open' | 'closed' | 'failed'; error: unknown } = {
        state: 'open',
        error: undefined,
      };
      // A revoked secret or key, or a deleted part, ends the stream (checked every credentialRecheckMs).
      let lastCheckMs = performance.now();
      const recheckAccess = async () => {
        const bearer = /^Bearer\s+(\S+)$/i.exec(context.requestHeader.get('authorization') ?? '')?.[1] ?? '';
        const current = await deps.authenticator.principalFromToken(bearer);
        await requireMachinePart(ctx, current, part.id, 'operator', 'hello.part_id');
      };
      (async () => {
        try {
          for (;;) {
            const next = await iterator.next();
            if (next.done) break;
            if (next.value.message.case === 'hello') {
              throw invalidArgument('hello', 'only the first message of Connect may be hello');
            }
            session.heard();
            if (performance.now() - lastCheckMs > settings.credentialRecheckMs) {
              lastCheckMs = performance.now();
              await recheckAccess();
            }
          }
          machineSide.state = 'closed';
        } catch (error) {
          machineSide.state = 'failed';
          machineSide.error = error;
        } finally {
          await session.close();
        }
      })().catch(() => {});
      try {
        yield {
          message: {
            case: 'welcome',
            value: {
              heartbeatInterval: durationFromMs(settings.heartbeatIntervalMs),
              offlineAfter: durationFromMs(settings.silenceTimeoutMs),
              configRevision: String(part.revision),
              serverTime: timestampFromMs(deps.clock.nowMs()),
            },
          },
        };
        if (hello.configRevision !== '' && hello.configRevision !== String(part.revision)) {
          yield toResponse({
            kind: 'config-changed',
            revision: String(part.revision),
            changedAtMs: part.lastUpdated.getTime(),
          });
        }
        for (;;) {
          let message: LiveStreamMessage;
          try {
            message = await session.next();
          } catch (error) {
            const side = machineSide;
            if (side.state === 'closed' || context.signal.aborted) return; // a normal end
            if (side.state === 'failed') {
              if (side.error instanceof DomainError) throw side.error;
              return; // the connection broke: nobody is left to tell
            }
            throw error; // silence timeout, superseded, shutdown
          }
          yield toResponse(message);
        }
      } finally {
        await session.close();
      }
    },
  };
}
