import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import { DomainError } from '../../domain/errors.ts';
import { requirePart } from '../../domain/fleet/parts.ts';
import type { StoredLogEntry } from '../../domain/logs/log-entry.ts';
import { getPartLogs, levelsOf, validateFilter } from '../../domain/logs/part-logs.ts';
import { fleetContextOf } from '../app/fleet-messages.ts';
import { principalOf } from '../context.ts';
import { logEntryToProto } from './log-entry-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

/** Entries a tail may hold for a slow client before it is ended (the client then re-tails). */
const tailBacklogMax = 10_000;

/**
 * AppService machine logs and restart: `GetRobotPartLogs` (pages newest first, walking back in time),
 * `TailRobotPartLogs` (new entries as any replica stores them). Reading logs needs operator on the machine
 * (or the part's own credentials); nobody can delete logs — they expire with their daily partition.
 */
export function partLogsHandlers(deps: CloudDeps): Handlers {
  const ctx = fleetContextOf(deps);
  return {
    async getRobotPartLogs(req, context) {
      const part = await requirePart(ctx, principalOf(context), req.id, 'operator');
      const page = await getPartLogs(
        deps.machines.logs,
        { organizationId: part.organizationId, partId: part.id },
        {
          filter: req.filter,
          levels: req.levels,
          errorsOnly: req.errorsOnly,
          start: req.start ? timestampDate(req.start) : undefined,
          end: req.end ? timestampDate(req.end) : undefined,
          pageToken: req.pageToken,
          limit: req.limit === undefined ? undefined : Number(req.limit),
        },
      );
      return { logs: page.entries.map(logEntryToProto), nextPageToken: page.nextPageToken };
    },

    async *tailRobotPartLogs(req, context) {
      const part = await requirePart(ctx, principalOf(context), req.id, 'operator');
      const levels = levelsOf([], req.errorsOnly);
      const filter = validateFilter(req.filter)?.toLowerCase();
      const matches = (entry: StoredLogEntry) =>
        (levels.length === 0 || levels.includes(entry.level)) &&
        (filter === undefined || entry.message.toLowerCase().includes(filter));
      const signal = AbortSignal.any([context.signal, deps.machines.shutdownSignal]);
      const pending: StoredLogEntry[][] = [];
      let backlog = 0;
      let wake: (() => void) | undefined;
      const where = { organizationId: part.organizationId, partId: part.id };
      const stop = await deps.machines.logTail.follow(where, (entries) => {
        const matched = entries.filter(matches);
        if (matched.length === 0) return;
        pending.push(matched);
        backlog += matched.length;
        wake?.();
      });
      const onAbort = () => wake?.();
      signal.addEventListener('abort', onAbort);
      try {
        while (!signal.aborted) {
          if (backlog > tailBacklogMax) {
            throw new DomainError(
              'ResourceExhausted',
              `the client fell more than ${tailBacklogMax} log entries behind; tail again`,
            );
          }
          const batch = pending.shift();
          if (batch) {
            backlog -= batch.length;
            yield { logs: batch.map(logEntryToProto) };
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        stop();
      }
    },
  };
}
