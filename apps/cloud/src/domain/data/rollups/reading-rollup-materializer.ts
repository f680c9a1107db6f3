import type { Database } from '../../../infra/postgres/database.ts';

/**
 * Recomputes the dirty buckets of the reading rollups (migration 0023) from the raw readings.
 *
 * One pass = one REPEATABLE READ transaction (one snapshot for every statement): read up to `maxBuckets`
 * marked buckets with the ids of all their marks, delete those buckets' rollup rows, insert them again from
 * the readings, delete exactly the marks read. Passes run one at a time (a session advisory lock, taken
 * BEFORE the transaction's snapshot).
 *
 * Why that is exact, race by race:
 * - Rows and their marks commit together (the triggers run in the writer's transaction). A writer committed
 *   before our snapshot: we see its rows AND its marks, recompute with the rows and delete the marks. A
 *   writer not committed at our snapshot: we see neither; its marks survive our DELETE (we delete by id,
 *   only ids we read), so the bucket stays dirty and the next pass recomputes it. Deletes of readings are
 *   writers too (OLD TABLE marks).
 * - A query runs in one statement: it sees a writer's rows and marks together, and our new rollup rows and
 *   deleted marks together. A bucket with a visible mark is read raw, so a rollup older than the bucket's
 *   rows is never used.
 * - Two passes: the lock serializes them and the second takes its snapshot after the first committed, so
 *   it never reads marks the first deleted nor writes rollups older than the first's. Nothing else writes
 *   rollup rows or deletes marks, so the REPEATABLE READ transaction has no write conflicts to fail on.
 * - A bucket whose rows are all gone: its rollup rows are deleted and nothing is inserted.
 */

/** Any constant; the same on every replica so only one pass runs at a time. */
export const materializerLockKey = 7_204_231;

/** A bucket with more distinct paths than this keeps no path statistics (paths NULL). */
export const maxPathsPerBucket = 1_000;

export interface MaterializePassResult {
  /** Buckets recomputed (0: nothing was dirty, or another pass holds the lock). */
  buckets: number;
  /** Marks deleted. */
  marks: number;
  /** false when another pass held the lock (nothing done). */
  ran: boolean;
}

export interface MaterializeOptions {
  maxBuckets?: number;
  /**
   * Only buckets whose newest mark is at least this old (by the database clock; default 0): a bucket still
   * being written to is recomputed once it settles, not after every upload (queries read it raw meanwhile).
   */
  settleMs?: number;
  /** Between the read of the marks and the recomputation (tests use it to interleave writers). */
  afterMarksRead?: () => Promise<void>;
}

interface MarkedBucket {
  ids: string[];
  organization_id: string;
  source_id: string;
  // As text (the session's own output format, read back by the same session): 'infinity' round-trips.
  captured_hour: string;
  received_hour: string;
  requested_hour: string;
}

const bucketKeyColumns = 'organization_id, source_id, captured_hour, received_hour, requested_hour';

// The picked buckets as a relation `k` (i = position) from the arrays $1…$5.
const pickedBuckets = `SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[])
    WITH ORDINALITY AS k(organization_id, source_id, captured_hour, received_hour, requested_hour, i)`;

// Rows of the picked buckets: per bucket one range of readings_source_time (OFFSET 0 keeps the LATERAL
// subquery apart, so PostgreSQL probes the index per bucket instead of sorting every reading for a merge).
const bucketRows = `SELECT k.i, r.data
    FROM k CROSS JOIN LATERAL (
      SELECT r.data FROM readings r
       WHERE r.source_id = k.source_id AND r.organization_id = k.organization_id
         AND r.captured_at >= k.captured_hour AND r.captured_at < k.captured_hour + interval '1 hour'
         AND mcloud_private.reading_rollup_hour(r.time_received) = k.received_hour
         AND mcloud_private.reading_rollup_hour(r.time_requested) = k.requested_hour
      OFFSET 0) r`;

// Every node below `data` reached through objects, aggregated per (bucket, path) into the bucket's `paths`
// object: path (a JSON array of steps) → [numbers, sum, min, max, arrays, others] (migration 0027).
const recomputeSql = `
WITH RECURSIVE
  k AS MATERIALIZED (${pickedBuckets}),
  rows AS MATERIALIZED (${bucketRows}),
  nodes(i, path, value) AS (
    SELECT r.i, ARRAY[e.key], e.value
      FROM rows r, jsonb_each(CASE WHEN jsonb_typeof(r.data) = 'object' THEN r.data ELSE '{}'::jsonb END) e
    UNION ALL
    SELECT n.i, n.path || e.key, e.value
      FROM nodes n, jsonb_each(CASE WHEN jsonb_typeof(n.value) = 'object' THEN n.value ELSE '{}'::jsonb END) e
     WHERE jsonb_typeof(n.value) = 'object'
  ),
  paths AS MATERIALIZED (
    SELECT i, array_to_json(path)::text AS path,
           count(number) AS number_count, sum(number) AS number_sum, min(number) AS number_min,
           max(number) AS number_max, count(*) FILTER (WHERE t = 'array') AS array_count,
           count(*) FILTER (WHERE t IN ('string', 'boolean', 'object')) AS other_count
      FROM (SELECT i, path, t, CASE WHEN t = 'number' THEN value::numeric END AS number
              FROM (SELECT i, path, value, jsonb_typeof(value) AS t FROM nodes) typed) n
     GROUP BY i, path
  ),
  path_objects AS (
    SELECT i, count(*) AS paths,
           jsonb_object_agg(path, jsonb_build_array(number_count, number_sum, number_min, number_max, array_count,
                                                    other_count)) AS stats
      FROM paths GROUP BY i
  ),
  buckets AS (
    SELECT b.i, b.row_count,
           CASE WHEN b.objects AND COALESCE(c.paths, 0) <= ${maxPathsPerBucket} THEN COALESCE(c.stats, '{}'::jsonb) END AS stats
      FROM (SELECT i, count(*) AS row_count, bool_and(jsonb_typeof(data) = 'object') AS objects FROM rows GROUP BY i) b
      LEFT JOIN path_objects c ON c.i = b.i
  )
INSERT INTO reading_rollup_buckets (${bucketKeyColumns}, row_count, paths)
SELECT k.organization_id, k.source_id, k.captured_hour, k.received_hour, k.requested_hour, b.row_count, b.stats
  FROM buckets b JOIN k ON k.i = b.i`;

function bucketMatch(table: string): string {
  return `${table} t USING (${pickedBuckets}) k
   WHERE t.organization_id = k.organization_id AND t.source_id = k.source_id AND t.captured_hour = k.captured_hour
     AND t.received_hour = k.received_hour AND t.requested_hour = k.requested_hour`;
}

/** One pass over at most `maxBuckets` dirty buckets. */
export async function materializeReadingRollups(
  db: Database,
  signal: AbortSignal,
  options: MaterializeOptions = {},
): Promise<MaterializePassResult> {
  signal.throwIfAborted();
  const maxBuckets = options.maxBuckets ?? 500;
  const client = await db.connect();
  let locked = false;
  let open = false;
  try {
    const lock = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      materializerLockKey,
    ]);
    locked = lock.rows[0]?.locked === true;
    if (!locked) return { buckets: 0, marks: 0, ran: false };
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    open = true;
    // The nodes of a pass (~5 per reading) stay in memory for the aggregation.
    await client.query(`SET LOCAL work_mem = '64MB'`);
    const marked = await client.query<MarkedBucket>(
      `SELECT array_agg(id)::text[] AS ids, organization_id, source_id, captured_hour::text,
              received_hour::text, requested_hour::text
         FROM reading_rollup_marks GROUP BY ${bucketKeyColumns}
        HAVING max(marked_at) <= now() - $2::double precision * interval '1 millisecond'
        ORDER BY min(id) LIMIT $1`,
      [maxBuckets, options.settleMs ?? 0],
    );
    if (marked.rows.length === 0) {
      await client.query('COMMIT');
      open = false;
      return { buckets: 0, marks: 0, ran: true };
    }
    await options.afterMarksRead?.();
    signal.throwIfAborted();
    const keys = [
      marked.rows.map((row) => row.organization_id),
      marked.rows.map((row) => row.source_id),
      marked.rows.map((row) => row.captured_hour),
      marked.rows.map((row) => row.received_hour),
      marked.rows.map((row) => row.requested_hour),
    ];
    await client.query(`DELETE FROM ${bucketMatch('reading_rollup_buckets')}`, keys);
    await client.query(recomputeSql, keys);
    const ids = marked.rows.flatMap((row) => row.ids);
    await client.query('DELETE FROM reading_rollup_marks WHERE id = ANY($1::bigint[])', [ids]);
    await client.query('COMMIT');
    open = false;
    return { buckets: marked.rows.length, marks: ids.length, ran: true };
  } catch (error) {
    if (open) await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock($1)', [materializerLockKey]).catch(() => {});
    client.release();
  }
}

/** Passes until nothing is dirty (or the time budget is spent). Returns the buckets recomputed. */
export async function materializeAllReadingRollups(
  db: Database,
  signal: AbortSignal,
  options: MaterializeOptions & { budgetMs?: number; nowMs?: () => number } = {},
): Promise<number> {
  const now = options.nowMs ?? (() => performance.now());
  const began = now();
  let total = 0;
  for (;;) {
    const pass = await materializeReadingRollups(db, signal, options);
    total += pass.buckets;
    if (!pass.ran || pass.buckets === 0) return total;
    if (options.budgetMs !== undefined && now() - began >= options.budgetMs) return total;
  }
}
