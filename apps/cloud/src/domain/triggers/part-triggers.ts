import type { Queryable } from '../../infra/postgres/database.ts';
import type { Notifications } from '../logs/log-tail.ts';
import type { PartPlacement } from '../machines/machine-events.ts';
import { machineChannel, parseMachineNotice } from '../machines/machine-notifications.ts';
import type { Clock } from '../shared/clock.ts';
import { parseTriggers, type TriggerConfig, type TriggerEventType } from './trigger-config.ts';

/** A part's triggers, grouped by event type (every list empty for a part without triggers). */
export type PartTriggers = Readonly<Record<TriggerEventType, readonly TriggerConfig[]>>;

export const noTriggers: PartTriggers = Object.freeze({
  part_online: [],
  part_offline: [],
  part_data_ingested: [],
  conditional_data_ingested: [],
  conditional_logs_ingested: [],
});

export interface PartTriggersCache {
  /**
   * The part's current triggers, parsed from its configuration. Cached per part: a part without triggers
   * costs one Map lookup. `db` runs the load on a miss (pass the event's transaction client when called
   * inside one, so no second pool connection is needed).
   */
  forPart(db: Queryable, part: PartPlacement): Promise<PartTriggers>;
  /** Drops the part's entry (or every entry). */
  invalidate(partId?: string): void;
}

export interface PartTriggersCacheOptions {
  /** NOTIFY listener: `config-changed` on `mcloud_machine` (sent by every config save) invalidates. */
  notifications: Notifications;
  clock: Clock;
  /** Entries are re-read after this long even without a notice (a safety net; default 60 s). */
  maxAgeMs?: number;
  maxEntries?: number;
  onError: (error: unknown) => void;
}

interface Entry {
  triggers: PartTriggers;
  loadedAtMs: number;
}

/**
 * Per-process cache of parsed triggers. A configuration save bumps `robot_parts.revision` and NOTIFYs
 * `config-changed` on commit; every replica drops that part's entry when the notice arrives (and every
 * entry after the listening connection was re-established, since notices may have been missed). A load
 * that raced an invalidation is not stored, so a stale configuration is never cached.
 */
export function createPartTriggersCache(options: PartTriggersCacheOptions): PartTriggersCache {
  const entries = new Map<string, Entry>();
  const maxAgeMs = options.maxAgeMs ?? 60_000;
  const maxEntries = options.maxEntries ?? 100_000;
  let generation = 0;
  let listening: Promise<void> | undefined;

  function invalidate(partId?: string): void {
    generation++;
    if (partId === undefined) entries.clear();
    else entries.delete(partId);
  }

  function listen(): Promise<void> {
    listening ??= (async () => {
      options.notifications.subscribe(
        machineChannel,
        (payload) => {
          const notice = parseMachineNotice(payload);
          if (notice?.kind === 'config-changed') invalidate(notice.p);
        },
        () => invalidate(),
      );
      await options.notifications.ready();
    })().catch((error: unknown) => {
      listening = undefined;
      throw error;
    });
    return listening;
  }

  async function load(db: Queryable, part: PartPlacement): Promise<PartTriggers> {
    const result = await db.query<{ triggers: unknown }>(
      `SELECT config->'triggers' AS triggers FROM robot_parts WHERE id = $1 AND organization_id = $2`,
      [part.partId, part.organizationId],
    );
    const raw = result.rows[0]?.triggers;
    if (raw === undefined || raw === null) return noTriggers;
    try {
      return groupByEvent(parseTriggers('config.triggers', raw));
    } catch (error) {
      // Validated on save; a configuration stored before validation existed must not break ingest.
      options.onError(error);
      return noTriggers;
    }
  }

  return {
    async forPart(db, part) {
      const nowMs = options.clock.nowMs();
      const hit = entries.get(part.partId);
      if (hit && nowMs - hit.loadedAtMs < maxAgeMs && nowMs >= hit.loadedAtMs) return hit.triggers;
      await listen();
      const startedGeneration = generation;
      const triggers = await load(db, part);
      if (generation === startedGeneration) {
        if (entries.size >= maxEntries) entries.clear();
        entries.set(part.partId, { triggers, loadedAtMs: nowMs });
      }
      return triggers;
    },
    invalidate,
  };
}

export function groupByEvent(triggers: readonly TriggerConfig[]): PartTriggers {
  if (triggers.length === 0) return noTriggers;
  const grouped: Record<TriggerEventType, TriggerConfig[]> = {
    part_online: [],
    part_offline: [],
    part_data_ingested: [],
    conditional_data_ingested: [],
    conditional_logs_ingested: [],
  };
  for (const trigger of triggers) grouped[trigger.eventType].push(trigger);
  return grouped;
}
