import type { DatabaseClient, Queryable } from '../../infra/postgres/database.ts';
import type { LogEntryInput, StoredLogEntry } from './log-entry.ts';

interface LogRow {
  id: string;
  organization_id: string;
  part_id: string;
  received_at: Date;
  time: Date;
  level: string;
  host: string;
  logger_name: string;
  message: string;
  caller: Record<string, unknown> | null;
  stack: string;
  fields: Record<string, unknown>[] | null;
}

const logColumns =
  'id, organization_id, part_id, received_at, time, level, host, logger_name, message, caller, stack, fields';

function fromRow(row: LogRow): StoredLogEntry {
  return {
    id: row.id,
    organizationId: row.organization_id,
    partId: row.part_id,
    receivedAt: row.received_at,
    time: row.time,
    level: row.level,
    host: row.host,
    loggerName: row.logger_name,
    message: row.message,
    caller: row.caller ?? undefined,
    stack: row.stack,
    fields: row.fields ?? [],
  };
}

/** One statement for the whole batch; returns the stored rows in upload order. */
export async function insertLogEntries(
  tx: DatabaseClient,
  part: { organizationId: string; partId: string },
  receivedAt: Date,
  entries: readonly LogEntryInput[],
): Promise<StoredLogEntry[]> {
  const result = await tx.query<LogRow>(
    `INSERT INTO part_logs (organization_id, part_id, received_at, time, level, host, logger_name, message, caller, stack, fields)
     SELECT $1, $2, $3, t.time, t.level, t.host, t.logger_name, t.message, t.caller, t.stack, t.fields
       FROM unnest($4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::text[], $11::jsonb[])
            WITH ORDINALITY AS t(time, level, host, logger_name, message, caller, stack, fields, n)
      ORDER BY t.n
     RETURNING ${logColumns}`,
    [
      part.organizationId,
      part.partId,
      receivedAt,
      entries.map((e) => e.time ?? receivedAt),
      entries.map((e) => e.level),
      entries.map((e) => e.host),
      entries.map((e) => e.loggerName),
      entries.map((e) => e.message),
      entries.map((e) => (e.caller ? JSON.stringify(e.caller) : null)),
      entries.map((e) => e.stack),
      entries.map((e) => (e.fields.length > 0 ? JSON.stringify(e.fields) : null)),
    ],
  );
  return result.rows.map(fromRow).sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
}

export interface LogQuery {
  organizationId: string;
  partId: string;
  /** Case-insensitive substring of the message. */
  filter: string | undefined;
  /** Empty = every level. */
  levels: readonly string[];
  start: Date | undefined;
  end: Date | undefined;
  /** Only entries strictly older than this (time, id) position. */
  before: { timeMs: number; id: string } | undefined;
  limit: number;
}

/** Newest first (time, then id, descending). */
export async function queryLogEntries(db: Queryable, query: LogQuery): Promise<StoredLogEntry[]> {
  const params: unknown[] = [query.organizationId, query.partId];
  const where = ['organization_id = $1', 'part_id = $2'];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (query.filter) add((n) => `strpos(lower(message), lower(${n})) > 0`, query.filter);
  if (query.levels.length > 0) add((n) => `level = ANY(${n}::text[])`, query.levels);
  if (query.start) add((n) => `time >= ${n}`, query.start);
  if (query.end) add((n) => `time <= ${n}`, query.end);
  if (query.before) {
    params.push(new Date(query.before.timeMs), query.before.id);
    where.push(`(time, id) < ($${params.length - 1}, $${params.length}::bigint)`);
  }
  params.push(query.limit);
  const result = await db.query<LogRow>(
    `SELECT ${logColumns} FROM part_logs WHERE ${where.join(' AND ')} ORDER BY time DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return result.rows.map(fromRow);
}

/** Entries of one part with `afterId < id <= upToId` (upToId undefined = no upper bound), oldest first. */
export async function logEntriesAfter(
  db: Queryable,
  part: { organizationId: string; partId: string },
  afterId: string,
  upToId: string | undefined,
  limit: number,
): Promise<StoredLogEntry[]> {
  const result = await db.query<LogRow>(
    `SELECT ${logColumns} FROM part_logs
      WHERE organization_id = $1 AND part_id = $2 AND id > $3::bigint AND ($4::bigint IS NULL OR id <= $4::bigint)
      ORDER BY id LIMIT $5`,
    [part.organizationId, part.partId, afterId, upToId ?? null, limit],
  );
  return result.rows.map(fromRow);
}

export async function latestLogId(db: Queryable): Promise<string> {
  const result = await db.query<{ id: string | null }>(
    "SELECT coalesce(max(last_value), 0)::text AS id FROM pg_sequences WHERE sequencename = 'part_logs_id_seq'",
  );
  return result.rows[0]?.id ?? '0';
}
