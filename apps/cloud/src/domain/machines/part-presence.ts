import { type Database, type DatabaseClient, withTransaction } from '../../infra/postgres/database.ts';
import type { Clock } from '../shared/clock.ts';
import { type MachineEventObserver, type PartPlacement, runObservers } from './machine-events.ts';

/**
 * Live status of machine parts. Every machine contact calls `touch`; `last_access` is written at most
 * once per `writeIntervalMs` per part and process (in memory), except on the offline → online transition,
 * which is recorded at once. A part goes offline when its live stream ends (`streamEnded`) or when it
 * stayed silent longer than the liveness window (`sweepOffline`, run by one replica at a time). Each
 * transition updates `robot_parts.online`, appends a `part_status_changes` row and runs the event
 * observers, all in one transaction.
 */
export interface PartPresence {
  /** `atMs`: when the contact happened (default: now); `force`: write even within the throttle interval. */
  touch(part: PartPlacement, options?: { force?: boolean; atMs?: number }): Promise<void>;
  /** The part's live stream ended; `lastHeardMs` is when the machine was last heard on it. */
  streamEnded(part: PartPlacement, lastHeardMs: number): Promise<void>;
  /** Marks offline every online part silent for longer than the liveness window; returns how many. */
  sweepOffline(): Promise<number>;
}

export interface PartPresenceOptions {
  db: Database;
  clock: Clock;
  observers: readonly MachineEventObserver[];
  offlineAfterMs: () => number;
  writeIntervalMs: number;
  onError: (error: unknown) => void;
}

// Any constant works; the same on every replica so only one sweeps at a time.
const sweepLockKey = 7_204_205;
const sweepBatchMax = 1_000;
const throttleEntriesMax = 100_000;

export function createPartPresence(options: PartPresenceOptions): PartPresence {
  const { db, clock, observers } = options;
  const lastWrites = new Map<string, number>();

  async function recordTransitions(
    tx: DatabaseClient,
    parts: readonly PartPlacement[],
    online: boolean,
    at: Date,
  ): Promise<void> {
    if (parts.length === 0) return;
    await tx.query(
      `INSERT INTO part_status_changes (organization_id, part_id, online, at)
       SELECT o, p, $3, $4 FROM unnest($1::uuid[], $2::uuid[]) AS t(o, p)`,
      [parts.map((p) => p.organizationId), parts.map((p) => p.partId), online, at],
    );
    for (const part of parts) {
      await runObservers(observers, tx, { kind: online ? 'part-online' : 'part-offline', ...part, at });
    }
  }

  async function markOnline(part: PartPlacement, now: Date): Promise<void> {
    const fast = await db.query(
      `UPDATE robot_parts SET last_access = GREATEST(last_access, $3)
        WHERE id = $1 AND organization_id = $2 AND online`,
      [part.partId, part.organizationId, now],
    );
    if ((fast.rowCount ?? 0) > 0) return;
    await withTransaction(db, async (tx) => {
      const current = await tx.query<{ online: boolean }>(
        'SELECT online FROM robot_parts WHERE id = $1 AND organization_id = $2 FOR UPDATE',
        [part.partId, part.organizationId],
      );
      const row = current.rows[0];
      if (!row) return; // deleted meanwhile
      await tx.query(
        `UPDATE robot_parts SET last_access = GREATEST(coalesce(last_access, $3), $3), online = true, disconnected_at = NULL
          WHERE id = $1 AND organization_id = $2`,
        [part.partId, part.organizationId, now],
      );
      if (!row.online) await recordTransitions(tx, [part], true, now);
    });
  }

  return {
    async touch(part, touchOptions = {}) {
      const nowMs = touchOptions.atMs ?? clock.nowMs();
      const last = lastWrites.get(part.partId);
      if (
        !touchOptions.force &&
        last !== undefined &&
        nowMs >= last &&
        nowMs - last < options.writeIntervalMs
      ) {
        return;
      }
      if (lastWrites.size >= throttleEntriesMax) lastWrites.clear();
      lastWrites.set(part.partId, nowMs);
      try {
        await markOnline(part, new Date(nowMs));
      } catch (error) {
        lastWrites.delete(part.partId);
        options.onError(error);
      }
    },

    async streamEnded(part, lastHeardMs) {
      lastWrites.delete(part.partId);
      const now = new Date(clock.nowMs());
      const lastHeard = new Date(lastHeardMs);
      try {
        await withTransaction(db, async (tx) => {
          const current = await tx.query<{ online: boolean; last_access: Date | null }>(
            'SELECT online, last_access FROM robot_parts WHERE id = $1 AND organization_id = $2 FOR UPDATE',
            [part.partId, part.organizationId],
          );
          const row = current.rows[0];
          if (!row) return;
          // Heard from elsewhere (another stream, another call) after this stream's last message: still here.
          if (row.last_access && row.last_access.getTime() > lastHeardMs) return;
          await tx.query(
            `UPDATE robot_parts SET online = false, disconnected_at = $3, last_access = GREATEST(coalesce(last_access, $4), $4)
              WHERE id = $1 AND organization_id = $2`,
            [part.partId, part.organizationId, now, lastHeard],
          );
          if (row.online) await recordTransitions(tx, [part], false, now);
        });
      } catch (error) {
        options.onError(error);
      }
    },

    async sweepOffline() {
      const nowMs = clock.nowMs();
      const cutoff = new Date(nowMs - options.offlineAfterMs());
      return withTransaction(db, async (tx) => {
        const lock = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
          sweepLockKey,
        ]);
        if (!lock.rows[0]?.locked) return 0;
        const stale = await tx.query<{
          organization_id: string;
          location_id: string;
          robot_id: string;
          id: string;
        }>(
          `UPDATE robot_parts SET online = false
            WHERE id IN (SELECT id FROM robot_parts WHERE online AND last_access < $1
                          ORDER BY last_access LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING organization_id, location_id, robot_id, id`,
          [cutoff, sweepBatchMax],
        );
        const parts = stale.rows.map((row) => ({
          organizationId: row.organization_id,
          locationId: row.location_id,
          robotId: row.robot_id,
          partId: row.id,
        }));
        for (const part of parts) lastWrites.delete(part.partId);
        await recordTransitions(tx, parts, false, new Date(nowMs));
        return parts.length;
      });
    },
  };
}
