import type { Database } from '../../infra/postgres/database.ts';
import { createLogPartitions, type LogPartitions } from '../logs/log-partitions.ts';
import { applyLogRetention, type LogRetentionResult } from '../logs/log-retention.ts';
import { createLogTail, type LogTail, type Notifications } from '../logs/log-tail.ts';
import type { LogsContext } from '../logs/part-logs.ts';
import type { Clock } from '../shared/clock.ts';
import { createLiveStreams, type LiveStreams } from './live-streams.ts';
import type { MachineEventObserver } from './machine-events.ts';
import { createPartPresence, type PartPresence } from './part-presence.ts';

/** Timing of the machine connection (CloudConfig.machineConnection). */
export interface MachineConnectionSettings {
  /** Both sides of a live stream send a heartbeat this often. */
  heartbeatIntervalMs: number;
  /** A live stream silent this long is ended and its part goes offline. */
  silenceTimeoutMs: number;
  /** How often a live stream re-checks its credentials (revoked secret or key, deleted part). */
  credentialRecheckMs: number;
  /** `last_access` is written at most this often per part and replica. */
  lastAccessWriteIntervalMs: number;
  /** How often a replica tries the offline sweep (one replica at a time does it). */
  offlineSweepIntervalMs: number;
  /** How often a replica tries the log retention (partitions ahead, expired ones dropped). */
  logRetentionIntervalMs: number;
}

export const defaultMachineConnectionSettings: MachineConnectionSettings = {
  heartbeatIntervalMs: 2_000,
  silenceTimeoutMs: 6_000,
  credentialRecheckMs: 10_000,
  lastAccessWriteIntervalMs: 5_000,
  offlineSweepIntervalMs: 5_000,
  logRetentionIntervalMs: 3_600_000,
};

/** The cloud side of machine connections in one process: status, live streams, logs and their tasks. */
export interface MachineRuntime {
  presence: PartPresence;
  streams: LiveStreams;
  logTail: LogTail;
  logs: LogsContext;
  partitions: LogPartitions;
  /** One offline sweep now (the background task runs it every `offlineSweepIntervalMs`). */
  sweepOffline(): Promise<number>;
  /** One retention pass now (the background task runs it every `logRetentionIntervalMs`). */
  applyLogRetention(): Promise<LogRetentionResult>;
  /** Aborted when the process stops: long-lived calls (log tails) end with it. */
  shutdownSignal: AbortSignal;
  /** Starts the background tasks. */
  start(): void;
  stop(): Promise<void>;
}

export function createMachineRuntime(options: {
  db: Database;
  clock: Clock;
  notifications: Notifications;
  observers: readonly MachineEventObserver[];
  settings: () => MachineConnectionSettings;
  offlineAfterMs: () => number;
  onError: (error: unknown) => void;
}): MachineRuntime {
  const { db, clock, notifications, observers, settings, onError } = options;
  const presence = createPartPresence({
    db,
    clock,
    observers,
    offlineAfterMs: options.offlineAfterMs,
    writeIntervalMs: settings().lastAccessWriteIntervalMs,
    onError,
  });
  const streams = createLiveStreams({
    db,
    clock,
    notifications,
    presence,
    heartbeatIntervalMs: () => settings().heartbeatIntervalMs,
    silenceTimeoutMs: () => settings().silenceTimeoutMs,
    onError,
  });
  const partitions = createLogPartitions(db);
  const logTail = createLogTail(db, notifications, onError);
  const timers: NodeJS.Timeout[] = [];
  const closing = new AbortController();
  const running = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work.catch(onError).finally(() => running.delete(tracked));
    running.add(tracked);
  };

  return {
    presence,
    streams,
    logTail,
    partitions,
    logs: { db, clock, partitions, observers },
    shutdownSignal: closing.signal,
    sweepOffline: () => presence.sweepOffline(),
    applyLogRetention: () => applyLogRetention(db, clock, partitions),
    start() {
      track(applyLogRetention(db, clock, partitions));
      timers.push(
        setInterval(() => track(presence.sweepOffline()), settings().offlineSweepIntervalMs),
        setInterval(() => track(applyLogRetention(db, clock, partitions)), settings().logRetentionIntervalMs),
      );
      for (const timer of timers) timer.unref();
    },
    async stop() {
      for (const timer of timers) clearInterval(timer);
      closing.abort();
      await streams.closeAll();
      await Promise.allSettled([...running]);
    },
  };
}
