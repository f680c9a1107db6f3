import type { Database, Queryable } from '../../infra/postgres/database.ts';

/**
 * Daily partitions of `part_logs` (by UTC day of receipt): `part_logs_YYYYMMDD`. Created on demand before
 * an insert and ahead of time by the retention task; dropped whole after the retention period.
 */
const dayMs = 86_400_000;

export function dayStartMs(ms: number): number {
  return Math.floor(ms / dayMs) * dayMs;
}

export function partitionName(day: number): string {
  return `part_logs_${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The UTC day a partition name stands for; undefined for names that are not ours. */
export function partitionDayMs(name: string): number | undefined {
  const match = /^part_logs_(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!match) return undefined;
  return Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
}

export interface LogPartitions {
  /** Makes sure the partition holding `receivedAtMs` exists. */
  ensure(receivedAtMs: number): Promise<void>;
  /** Forgets what this process believes exists (after a partition was dropped or an insert missed one). */
  forget(): void;
}

export function createLogPartitions(db: Database): LogPartitions {
  const known = new Set<number>();
  return {
    async ensure(receivedAtMs) {
      const day = dayStartMs(receivedAtMs);
      if (known.has(day)) return;
      const from = new Date(day).toISOString();
      const to = new Date(day + dayMs).toISOString();
      try {
        await db.query(
          `CREATE TABLE IF NOT EXISTS ${partitionName(day)} PARTITION OF part_logs FOR VALUES FROM ('${from}') TO ('${to}')`,
        );
      } catch (error) {
        // Another replica created it at the same moment (unique violation on the catalog): fine.
        if ((error as { code?: string }).code !== '23505' && (error as { code?: string }).code !== '42P07') {
          throw error;
        }
      }
      known.add(day);
    },
    forget() {
      known.clear();
    },
  };
}

export async function listLogPartitions(db: Queryable): Promise<{ name: string; dayMs: number }[]> {
  const result = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname = 'part_logs' AND p.relnamespace = current_schema()::regnamespace ORDER BY c.relname`,
  );
  return result.rows.flatMap((row) => {
    const day = partitionDayMs(row.name);
    return day === undefined ? [] : [{ name: row.name, dayMs: day }];
  });
}
