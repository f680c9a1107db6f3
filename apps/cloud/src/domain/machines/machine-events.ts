import type { DatabaseClient } from '../../infra/postgres/database.ts';
import type { StoredLogEntry } from '../logs/log-entry.ts';

/** Where a machine part sits in the fleet. */
export interface PartPlacement {
  organizationId: string;
  locationId: string;
  robotId: string;
  partId: string;
}

/** A part went online (first contact after being offline) or offline (stream ended, or silent too long). */
export interface PartStatusEvent extends PartPlacement {
  kind: 'part-online' | 'part-offline';
  at: Date;
}

/** A batch of log entries from a part was stored. */
export interface PartLogsEvent extends PartPlacement {
  kind: 'part-logs';
  entries: readonly StoredLogEntry[];
}

export type MachineEvent = PartStatusEvent | PartLogsEvent;

/**
 * The hook for work that must happen exactly when a machine event is committed (the triggers issue:
 * part_online / part_offline and log-level triggers). Observers are listed in `CloudDeps.machineEventObservers`
 * and run, in order, INSIDE the transaction that records the event: the status change (robot_parts.online
 * plus its part_status_changes row) or the log batch insert. Enqueue jobs with `tx` (e.g. graphile-worker's
 * `SELECT graphile_worker.add_job(...)`) so the job exists if and only if the event was committed.
 * An observer that throws rolls the whole event back: the status change is retried at the next contact /
 * sweep, a log batch answers an error to the machine (which resends it). Keep observers quick; never do
 * network I/O inside them.
 */
export type MachineEventObserver = (tx: DatabaseClient, event: MachineEvent) => Promise<void>;

export async function runObservers(
  observers: readonly MachineEventObserver[],
  tx: DatabaseClient,
  event: MachineEvent,
): Promise<void> {
  for (const observer of observers) await observer(tx, event);
}
