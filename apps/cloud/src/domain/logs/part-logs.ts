import { type Database, withTransaction } from '../../infra/postgres/database.ts';
import { invalidArgument } from '../errors.ts';
import { type MachineEventObserver, type PartPlacement, runObservers } from '../machines/machine-events.ts';
import type { Clock } from '../shared/clock.ts';
import {
  errorLevels,
  type LogEntryInput,
  logLimits,
  normalizeLevel,
  type StoredLogEntry,
} from './log-entry.ts';
import type { LogPartitions } from './log-partitions.ts';
import { insertLogEntries, queryLogEntries } from './logs-repository.ts';

export interface LogsContext {
  db: Database;
  clock: Clock;
  partitions: LogPartitions;
  observers: readonly MachineEventObserver[];
}

/** NOTIFY channel announcing stored batches: `{"o": org, "p": part, "a": first id, "b": last id}`. */
export const partLogsChannel = 'mcloud_part_logs';

export interface PartLogsNotice {
  o: string;
  p: string;
  a: string;
  b: string;
}

/**
 * Stores a validated batch in one transaction together with the NOTIFY that wakes the tails on every
 * replica and the `part-logs` observers.
 */
export async function appendPartLogs(
  ctx: LogsContext,
  part: PartPlacement,
  entries: readonly LogEntryInput[],
): Promise<StoredLogEntry[]> {
  if (entries.length === 0) return [];
  const receivedAt = new Date(ctx.clock.nowMs());
  const attempt = async () => {
    await ctx.partitions.ensure(receivedAt.getTime());
    return withTransaction(ctx.db, async (tx) => {
      const stored = await insertLogEntries(tx, part, receivedAt, entries);
      const notice: PartLogsNotice = {
        o: part.organizationId,
        p: part.partId,
        a: stored[0]?.id ?? '0',
        b: stored.at(-1)?.id ?? '0',
      };
      await tx.query('SELECT pg_notify($1, $2)', [partLogsChannel, JSON.stringify(notice)]);
      await runObservers(ctx.observers, tx, { kind: 'part-logs', ...part, entries: stored });
      return stored;
    });
  };
  try {
    return await attempt();
  } catch (error) {
    // The partition was dropped or never existed although we believed otherwise: create it and retry once.
    if ((error as { code?: string }).code !== '23514') throw error;
    ctx.partitions.forget();
    return attempt();
  }
}

export interface PartLogsQuery {
  filter: string | undefined;
  levels: readonly string[];
  errorsOnly: boolean;
  start: Date | undefined;
  end: Date | undefined;
  pageToken: string | undefined;
  limit: number | undefined;
}

export interface PartLogsPage {
  entries: StoredLogEntry[];
  /** Empty when there is nothing older. */
  nextPageToken: string;
}

function encodePageToken(entry: StoredLogEntry): string {
  return Buffer.from(JSON.stringify({ t: entry.time.getTime(), i: entry.id })).toString('base64url');
}

function decodePageToken(token: string): { timeMs: number; id: string } {
  try {
    const value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      t?: unknown;
      i?: unknown;
    };
    if (
      typeof value.t === 'number' &&
      Number.isFinite(value.t) &&
      typeof value.i === 'string' &&
      /^\d+$/.test(value.i)
    ) {
      return { timeMs: value.t, id: value.i };
    }
  } catch {
    // reported below
  }
  throw invalidArgument('page_token', 'is not a token returned by GetRobotPartLogs', token);
}

/** Levels to match: `levels` if given, else error and above when `errors_only`, else all. */
export function levelsOf(levels: readonly string[], errorsOnly: boolean): string[] {
  const normalized = levels.map((level, index) => normalizeLevel(`levels[${index}]`, level));
  if (normalized.length > 0) return [...new Set(normalized)];
  return errorsOnly ? [...errorLevels] : [];
}

export function validateFilter(filter: string | undefined): string | undefined {
  if (filter === undefined || filter === '') return undefined;
  if (filter.length > logLimits.filterMaxChars) {
    throw invalidArgument('filter', `must be at most ${logLimits.filterMaxChars} characters`, filter);
  }
  return filter;
}

/** One page, newest first; `nextPageToken` continues backwards in time. */
export async function getPartLogs(
  ctx: LogsContext,
  part: { organizationId: string; partId: string },
  query: PartLogsQuery,
): Promise<PartLogsPage> {
  const limit = query.limit ?? logLimits.pageSizeDefault;
  if (!Number.isInteger(limit) || limit < 1 || limit > logLimits.pageSizeMax) {
    throw invalidArgument('limit', `must be from 1 to ${logLimits.pageSizeMax}`, limit);
  }
  if (query.start && query.end && query.start > query.end) {
    throw invalidArgument(
      'start',
      `must not be after end (${query.end.toISOString()})`,
      query.start.toISOString(),
    );
  }
  const entries = await queryLogEntries(ctx.db, {
    ...part,
    filter: validateFilter(query.filter),
    levels: levelsOf(query.levels, query.errorsOnly),
    start: query.start,
    end: query.end,
    before: query.pageToken ? decodePageToken(query.pageToken) : undefined,
    limit: limit + 1,
  });
  const page = entries.slice(0, limit);
  const last = page.at(-1);
  return { entries: page, nextPageToken: entries.length > limit && last ? encodePageToken(last) : '' };
}
