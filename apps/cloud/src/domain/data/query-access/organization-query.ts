import pg from 'pg';
import type { Database, DatabaseClient } from '../../../infra/postgres/database.ts';
import { DomainError } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { isUuid } from '../../validate.ts';
import { type ResultField, rawTextTypes } from '../bson/bson-from-postgres.ts';
import { queryErrorFromPostgres } from './query-errors.ts';
import { acquireQuerySlot, defaultMaxConcurrentQueries, type QueryShare } from './query-gate.ts';
import { createResultCollector, type ResultCollector } from './result-collector.ts';

/**
 * Runs one SELECT over the documents of ONE organization and returns each result row as a serialized
 * BSON document (TabularDataBySQL, TabularDataByMQL). Isolation is the database's job (migrations
 * 0006_query_access.sql and 0024_query_access_row_security.sql: `sensordata.readings` reads the tables
 * under row-level security policies that admit only the token's organization; the hot-storage and sink
 * views are security barriers with that condition): inside a READ ONLY transaction the server sets the
 * signed organization token,
 * `SET LOCAL ROLE mcloud_query` (no privilege except `sensordata.*`), `search_path = sensordata,
 * pg_catalog` (so `readings` is the organization's view), `TimeZone = UTC` and a statement timeout; the
 * statement then runs in the extended protocol (a second statement is refused by PostgreSQL itself) as a
 * subquery under `LIMIT maxRows + 1`, so the row cap stops it early; the byte cap applies while the rows
 * become BSON.
 *
 * The caller still validates user SQL first (parser allow-list: one SELECT, allowed functions); this
 * function is the second, independent line.
 *
 * Errors (DomainError): time budget → DeadlineExceeded naming the limit; rows/bytes over the cap →
 * ResourceExhausted naming the limit; a mistake in the statement (unknown column, bad cast, division by
 * zero) → InvalidArgument with PostgreSQL's message and position in `sql` (1-based characters, mapped
 * through `mapPosition` when the caller rewrote the user's text); a refused privilege → PermissionDenied;
 * `signal` aborted → Aborted (the backend's statement is cancelled).
 */

export interface QueryLimits {
  /** Budget for the whole query (each statement and the total). */
  timeoutMs: number;
  /** Maximum number of result documents. */
  maxRows: number;
  /** Maximum total size of the serialized BSON documents. */
  maxBytes: number;
  /** Queries of the same pool running at once (default 8); more wait for a slot within `timeoutMs`. */
  maxConcurrent?: number;
  /**
   * The bounded share of those slots this kind of query may take (pipeline runs: `pipeline-runs`). Without
   * one, a query takes its organization's share: at most half of the slots (rounded up), so one
   * organization's heavy queries never make another's wait.
   */
  share?: QueryShare;
}

/** The share of the query slots one organization's interactive queries may hold at once. */
export function organizationShare(organizationId: string, maxConcurrent: number): QueryShare {
  return { name: `organization ${organizationId}`, max: Math.max(1, Math.ceil(maxConcurrent / 2)) };
}

export const defaultQueryLimits: QueryLimits = {
  timeoutMs: 30_000,
  maxRows: 100_000,
  maxBytes: 16 * 1024 * 1024,
};

export interface OrganizationQuery {
  organizationId: string;
  /** One SELECT (may reference `readings`; other relations of schema `sensordata` as they are added). */
  sql: string;
  params?: readonly unknown[];
  limits: QueryLimits;
  /**
   * `columns` (default): one document per row keyed by column name. `json-document`: the statement returns
   * a single json/jsonb column whose value is the document (see bson/bson-from-json.ts for `$date`/`$oid`).
   * `json-text`: the same single column, returned as its JSON text in `jsonTexts` (no BSON; data pipelines
   * write it back into their sink).
   */
  rowShape?: 'columns' | 'json-document' | 'json-text';
  /** Maps a 1-based character position in `sql` to the position the user should see. */
  mapPosition?: (position: number) => number;
}

export interface OrganizationQueryResult {
  documents: Uint8Array[];
  totalBytes: number;
  /** Only for `rowShape: 'json-text'`. */
  jsonTexts?: string[];
}

// The statement runs as a subquery under a LIMIT one above the row cap: a plain (not cursor) execution keeps
// parallel plans, and the cap still stops PostgreSQL early. The newline ends a trailing `--` comment.
const wrapPrefix = 'SELECT * FROM (\n';
const wrapSuffix = '\n) AS mcloud_result LIMIT ';

export interface OrganizationQueryDeps {
  db: Database;
  clock: Clock;
}

export async function runOrganizationQuery(
  deps: OrganizationQueryDeps,
  query: OrganizationQuery,
  signal: AbortSignal,
): Promise<OrganizationQueryResult> {
  if (!isUuid(query.organizationId)) {
    throw new DomainError('InvalidArgument', `organization_id: must be a UUID (got ${query.organizationId})`);
  }
  signal.throwIfAborted();
  const maxConcurrent = query.limits.maxConcurrent ?? defaultMaxConcurrentQueries;
  const release = await acquireQuerySlot(
    deps.db,
    maxConcurrent,
    query.limits.timeoutMs,
    signal,
    query.limits.share ?? organizationShare(query.organizationId, maxConcurrent),
  );
  const startedMs = deps.clock.nowMs();
  let client: DatabaseClient;
  try {
    client = await deps.db.connect();
  } catch (error) {
    release();
    throw error;
  }
  return runOnClient(deps, client, { query, startedMs }, signal, release);
}

/** Runs the query on `client`; ends the transaction, then returns the client to the pool and frees the slot. */
async function runOnClient(
  deps: OrganizationQueryDeps,
  client: DatabaseClient,
  { query, startedMs }: { query: OrganizationQuery; startedMs: number },
  signal: AbortSignal,
  releaseSlot: () => void,
): Promise<OrganizationQueryResult> {
  const { limits } = query;
  let cancelled = false;
  const onAbort = () => {
    cancelled = true;
    // The statement is cancelled from another connection; the error then ends the query below.
    deps.db.query('SELECT pg_cancel_backend($1)', [processIdOf(client)]).catch(() => {});
  };
  signal.addEventListener('abort', onAbort, { once: true });
  let broken = false;
  try {
    await client.query(sessionSetup(query.organizationId.toLowerCase(), limits.timeoutMs));
    try {
      const collector = createResultCollector(limits, query.rowShape ?? 'columns');
      await streamRows(
        client,
        {
          text: `${wrapPrefix}${query.sql}${wrapSuffix}${limits.maxRows + 1}`,
          values: (query.params ?? []) as unknown[],
          rowMode: 'array',
          types: rawTextTypes,
          queryMode: 'extended',
        } as pg.QueryConfig,
        collector,
      );
      return collector.finish(deps.clock.nowMs() - startedMs);
    } catch (error) {
      if (cancelled) throw new DomainError('Aborted', 'query cancelled by the caller', { cause: error });
      throw queryErrorFromPostgres(error, {
        timeoutMs: limits.timeoutMs,
        positionOffset: wrapPrefix.length,
        sql: query.sql,
        mapPosition: query.mapPosition,
      });
    }
  } catch (error) {
    broken = !(error instanceof DomainError);
    throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
    // The result goes back without waiting for the ROLLBACK (one round trip less per query): the client
    // stays checked out until it completes — pg runs a client's queries in order — and only then returns
    // to the pool (discarded if the ROLLBACK failed) and frees the query slot.
    client.query('ROLLBACK').then(
      () => {
        client.release(broken);
        releaseSlot();
      },
      () => {
        client.release(true);
        releaseSlot();
      },
    );
  }
}

/** One round trip: read-only transaction, organization token, limits, then the unprivileged role. */
export function sessionSetup(organizationId: string, timeoutMs: number): string {
  const timeout = Math.max(1, Math.floor(timeoutMs));
  // organizationId is a validated UUID, so it can be inlined.
  return [
    'BEGIN TRANSACTION READ ONLY',
    `SELECT set_config('mcloud.query_token', mcloud_private.organization_token('${organizationId}'), true)`,
    `SET LOCAL statement_timeout = ${timeout}`,
    `SET LOCAL idle_in_transaction_session_timeout = ${timeout + 5_000}`,
    `SET LOCAL search_path = sensordata, pg_catalog`,
    `SET LOCAL TimeZone = 'UTC'`,
    'SET LOCAL ROLE mcloud_query',
  ].join('; ');
}

/** Runs one statement, handing each row to `collector` as it arrives (pg keeps no array of all rows). */
function streamRows(
  client: DatabaseClient,
  config: pg.QueryConfig,
  collector: ResultCollector,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const statement = new pg.Query(config);
    statement.on('row', (row: unknown[], result?: { fields: ResultField[] }) =>
      collector.add(row, result?.fields ?? []),
    );
    statement.once('end', () => resolve());
    statement.once('error', reject);
    client.query(statement);
  });
}

function processIdOf(client: DatabaseClient): number {
  return (client as unknown as { processID: number }).processID;
}
