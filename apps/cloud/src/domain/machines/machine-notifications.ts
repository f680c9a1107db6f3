import type { Queryable } from '../../infra/postgres/database.ts';

/**
 * NOTIFY channel for everything a replica holding a part's live stream must hear about, whichever
 * replica caused it. Sent inside the transaction that made the change, so it is delivered on commit.
 */
export const machineChannel = 'mcloud_machine';

export type MachineNotice =
  /** The part's configuration was saved (UpdateRobotPart, restore, …). */
  | { kind: 'config-changed'; o: string; p: string; revision: string; at: number }
  /** AppService.MarkPartForRestart. */
  | { kind: 'restart-requested'; o: string; p: string; at: number }
  /** A live stream for the part was opened: every other stream of that part ends. */
  | { kind: 'stream-opened'; o: string; p: string; stream: string };

export async function notifyMachine(db: Queryable, notice: MachineNotice): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [machineChannel, JSON.stringify(notice)]);
}

export function parseMachineNotice(payload: string): MachineNotice | undefined {
  try {
    const value = JSON.parse(payload) as MachineNotice;
    return typeof value?.p === 'string' && typeof value.kind === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
