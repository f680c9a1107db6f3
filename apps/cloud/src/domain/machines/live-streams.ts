import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../infra/postgres/database.ts';
import { DomainError } from '../errors.ts';
import type { Notifications } from '../logs/log-tail.ts';
import type { Clock } from '../shared/clock.ts';
import type { PartPlacement } from './machine-events.ts';
import { machineChannel, notifyMachine, parseMachineNotice } from './machine-notifications.ts';
import type { PartPresence } from './part-presence.ts';

/** What the cloud sends on a machine's live stream after the welcome. */
export type LiveStreamMessage =
  | { kind: 'heartbeat'; atMs: number }
  | { kind: 'config-changed'; revision: string; changedAtMs: number }
  | { kind: 'restart-requested'; requestedAtMs: number };

export interface LiveStreamSession {
  readonly id: string;
  /** The next message to send; rejects with the reason the stream ends (DeadlineExceeded, Aborted …). */
  next(): Promise<LiveStreamMessage>;
  /** A message arrived from the machine. */
  heard(): void;
  /** Ends the session (the machine closed its side, or the call was cancelled). Idempotent. */
  close(): Promise<void>;
}

export interface LiveStreams {
  open(part: PartPlacement): Promise<LiveStreamSession>;
  /** Number of sessions held by this replica (for tests and status). */
  size(): number;
  /** Ends every session (server shutdown): the machines reconnect to another replica. */
  closeAll(): Promise<void>;
}

export interface LiveStreamsOptions {
  db: Queryable;
  clock: Clock;
  notifications: Notifications;
  presence: PartPresence;
  heartbeatIntervalMs: () => number;
  /** Silence after which the cloud gives up on the machine. */
  silenceTimeoutMs: () => number;
  onError: (error: unknown) => void;
}

interface SessionState {
  part: PartPlacement;
  queue: LiveStreamMessage[];
  waiter: { resolve: (m: LiveStreamMessage) => void; reject: (e: unknown) => void } | undefined;
  ended: DomainError | undefined;
  superseded: boolean;
  lastHeardMs: number;
  lastHeardMonotonic: number;
  timer: NodeJS.Timeout | undefined;
  touching: Promise<void>;
}

/**
 * The live streams this replica holds, one per connected machine-server. Notices from any replica
 * (PostgreSQL NOTIFY on `mcloud_machine`) reach the session of the part: configuration saved, restart
 * requested, or a newer stream for the same part opened (this one then ends with Aborted).
 */
export function createLiveStreams(options: LiveStreamsOptions): LiveStreams {
  const sessions = new Map<string, Map<string, SessionState>>();
  let subscribed = false;

  function push(state: SessionState, message: LiveStreamMessage): void {
    if (state.ended) return;
    if (state.waiter) {
      const { resolve } = state.waiter;
      state.waiter = undefined;
      resolve(message);
    } else {
      state.queue.push(message);
    }
  }

  function end(state: SessionState, reason: DomainError): void {
    if (state.ended) return;
    state.ended = reason;
    clearInterval(state.timer);
    state.waiter?.reject(reason);
    state.waiter = undefined;
  }

  function onNotice(payload: string): void {
    const notice = parseMachineNotice(payload);
    if (!notice) return;
    for (const [id, state] of sessions.get(notice.p) ?? []) {
      if (state.part.organizationId !== notice.o) continue;
      switch (notice.kind) {
        case 'config-changed':
          push(state, { kind: 'config-changed', revision: notice.revision, changedAtMs: notice.at });
          break;
        case 'restart-requested':
          push(state, { kind: 'restart-requested', requestedAtMs: notice.at });
          break;
        case 'stream-opened':
          if (notice.stream !== id) {
            state.superseded = true;
            end(state, new DomainError('Aborted', 'a newer live stream for this part was opened'));
          }
          break;
      }
    }
  }

  /**
   * Notices sent while the LISTEN connection was down are lost: tell every connected machine the current
   * revision (it fetches the configuration if it differs from what it runs).
   */
  async function resync(): Promise<void> {
    const parts = [...sessions.values()].flatMap((forPart) =>
      [...forPart.values()].slice(0, 1).map((s) => s.part),
    );
    if (parts.length === 0) return;
    const rows = await options.db.query<{
      id: string;
      organization_id: string;
      revision: string;
      last_updated: Date;
    }>(
      `SELECT p.id, p.organization_id, p.revision::text, p.last_updated
         FROM robot_parts p JOIN unnest($1::uuid[], $2::uuid[]) AS k(id, organization_id)
           ON p.id = k.id AND p.organization_id = k.organization_id`,
      [parts.map((p) => p.partId), parts.map((p) => p.organizationId)],
    );
    for (const row of rows.rows) {
      for (const state of sessions.get(row.id)?.values() ?? []) {
        if (state.part.organizationId !== row.organization_id) continue;
        push(state, {
          kind: 'config-changed',
          revision: row.revision,
          changedAtMs: row.last_updated.getTime(),
        });
      }
    }
  }

  async function finish(id: string, state: SessionState): Promise<void> {
    end(state, new DomainError('Aborted', 'the live stream was closed'));
    const forPart = sessions.get(state.part.partId);
    if (forPart?.get(id) !== state) return;
    forPart.delete(id);
    if (forPart.size === 0) sessions.delete(state.part.partId);
    await state.touching;
    if (!state.superseded) await options.presence.streamEnded(state.part, state.lastHeardMs);
  }

  return {
    async open(part) {
      if (!subscribed) {
        subscribed = true;
        options.notifications.subscribe(machineChannel, onNotice, () => {
          resync().catch(options.onError);
        });
      }
      await options.notifications.ready();
      const id = randomUUID();
      const state: SessionState = {
        part,
        queue: [],
        waiter: undefined,
        ended: undefined,
        superseded: false,
        lastHeardMs: options.clock.nowMs(),
        lastHeardMonotonic: performance.now(),
        timer: undefined,
        touching: Promise.resolve(),
      };
      let forPart = sessions.get(part.partId);
      if (!forPart) {
        forPart = new Map();
        sessions.set(part.partId, forPart);
      }
      forPart.set(id, state);
      await options.presence.touch(part, { force: true, atMs: state.lastHeardMs });
      await notifyMachine(options.db, {
        kind: 'stream-opened',
        o: part.organizationId,
        p: part.partId,
        stream: id,
      });
      state.timer = setInterval(() => {
        const silentMs = performance.now() - state.lastHeardMonotonic;
        if (silentMs > options.silenceTimeoutMs()) {
          end(
            state,
            new DomainError(
              'Unavailable',
              `no message from the machine for ${Math.round(silentMs)} ms (limit ${options.silenceTimeoutMs()} ms)`,
            ),
          );
          finish(id, state).catch(options.onError);
          return;
        }
        // A client that does not read must not make the queue grow: one pending heartbeat is enough.
        if (!state.queue.some((m) => m.kind === 'heartbeat')) {
          push(state, { kind: 'heartbeat', atMs: options.clock.nowMs() });
        }
      }, options.heartbeatIntervalMs());
      state.timer.unref();
      return {
        id,
        next() {
          if (state.ended) return Promise.reject(state.ended);
          const queued = state.queue.shift();
          if (queued) return Promise.resolve(queued);
          return new Promise((resolve, reject) => {
            state.waiter = { resolve, reject };
          });
        },
        heard() {
          state.lastHeardMs = options.clock.nowMs();
          state.lastHeardMonotonic = performance.now();
          // Serialized, and awaited before the stream's end is recorded (a late touch must not undo it).
          state.touching = state.touching
            .then(() => options.presence.touch(part, { atMs: state.lastHeardMs }))
            .catch(options.onError);
        },
        close: () => finish(id, state),
      };
    },
    size() {
      let count = 0;
      for (const forPart of sessions.values()) count += forPart.size;
      return count;
    },
    async closeAll() {
      // Not an offline transition: the machines reconnect to another replica at once; if one does not,
      // the offline sweep notices after the liveness window.
      const all = [...sessions.values()].flatMap((forPart) => [...forPart.entries()]);
      for (const [, state] of all) {
        state.superseded = true;
        end(state, new DomainError('Unavailable', 'the cloud replica is shutting down; reconnect'));
      }
      await Promise.all(all.map(([id, state]) => finish(id, state)));
    },
  };
}
