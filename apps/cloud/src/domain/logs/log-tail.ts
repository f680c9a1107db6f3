import type { Queryable } from '../../infra/postgres/database.ts';
import type { StoredLogEntry } from './log-entry.ts';
import { latestLogId, logEntriesAfter } from './logs-repository.ts';
import { type PartLogsNotice, partLogsChannel } from './part-logs.ts';

/** What the tail needs from the notification listener (infra/postgres/notification-listener.ts). */
export interface Notifications {
  subscribe(channel: string, onMessage: (payload: string) => void, onResync?: () => void): () => void;
  ready(): Promise<void>;
}

export interface LogTail {
  /**
   * Calls `onEntries` with every batch of the part stored from now on, by any replica, oldest first.
   * Returns the unsubscribe function.
   */
  follow(
    part: { organizationId: string; partId: string },
    onEntries: (entries: StoredLogEntry[]) => void,
  ): Promise<() => void>;
  /** How many tails of the part this replica serves (tests wait for a tail to be in place). */
  followers(partId: string): number;
}

interface Followed {
  organizationId: string;
  partId: string;
  lastId: bigint;
  listeners: Set<(entries: StoredLogEntry[]) => void>;
  /** Reads are serialized per part so batches reach listeners in order and exactly once. */
  reading: Promise<void>;
}

const resyncBatchMax = 1_000;

/** One subscription per process; each notified batch is read once per replica and fanned out. */
export function createLogTail(
  db: Queryable,
  notifications: Notifications,
  onError: (error: unknown) => void,
): LogTail {
  const followed = new Map<string, Followed>();
  let subscribed = false; // stays subscribed for the life of the process

  /** A notified batch (ids from..to of this part), or everything after the last seen id (resync). */
  function read(entry: Followed, range: { from: string; to: string } | undefined): void {
    entry.reading = entry.reading.then(async () => {
      try {
        for (;;) {
          const after = range ? (BigInt(range.from) - 1n).toString() : entry.lastId.toString();
          const entries = await logEntriesAfter(db, entry, after, range?.to, resyncBatchMax);
          if (entries.length === 0) return;
          const lastId = BigInt((entries.at(-1) as StoredLogEntry).id);
          if (lastId > entry.lastId) entry.lastId = lastId;
          for (const listener of entry.listeners) listener(entries);
          if (entries.length < resyncBatchMax) return;
          range = range && { from: (lastId + 1n).toString(), to: range.to };
        }
      } catch (error) {
        onError(error);
      }
    });
  }

  function onMessage(payload: string): void {
    let notice: PartLogsNotice;
    try {
      notice = JSON.parse(payload) as PartLogsNotice;
    } catch (error) {
      onError(error);
      return;
    }
    const entry = followed.get(notice.p);
    if (entry && entry.organizationId === notice.o) read(entry, { from: notice.a, to: notice.b });
  }

  function onResync(): void {
    for (const entry of followed.values()) read(entry, undefined);
  }

  return {
    followers: (partId) => followed.get(partId)?.listeners.size ?? 0,
    async follow(part, onEntries) {
      if (!subscribed) {
        subscribed = true;
        notifications.subscribe(partLogsChannel, onMessage, onResync);
      }
      await notifications.ready();
      let entry = followed.get(part.partId);
      if (!entry) {
        entry = {
          organizationId: part.organizationId,
          partId: part.partId,
          lastId: BigInt(await latestLogId(db)),
          listeners: new Set(),
          reading: Promise.resolve(),
        };
        // Another follower may have registered while we awaited.
        const other = followed.get(part.partId);
        if (other) entry = other;
        else followed.set(part.partId, entry);
      }
      const current = entry;
      current.listeners.add(onEntries);
      return () => {
        current.listeners.delete(onEntries);
        if (current.listeners.size === 0 && followed.get(part.partId) === current)
          followed.delete(part.partId);
      };
    },
  };
}
