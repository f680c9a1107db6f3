import { DomainError } from '../../errors.ts';

/**
 * At most `max` user queries per database pool run at once; the others wait (up to their time budget)
 * for a slot. User SQL/MQL thus never takes every connection of the pool the rest of the cloud needs.
 * The gate belongs to the pool object (a WeakMap), so every caller of the same pool shares it.
 *
 * A caller may also name a share: at most `share.max` slots go to callers of that share at once (data
 * pipeline runs take theirs from a share of 2), so background work never holds more than its share and
 * interactive queries always find the rest. A waiter whose share is full does not hold up the waiters
 * behind it.
 */

/** A bounded part of the slots for one kind of work, e.g. `{name: 'pipeline-runs', max: 2}`. */
export interface QueryShare {
  name: string;
  max: number;
}

interface Waiter {
  max: number;
  share: QueryShare | undefined;
  onTurn: () => void;
}

interface Gate {
  active: number;
  /** Slots taken per share name. */
  shares: Map<string, number>;
  waiting: Waiter[];
}

function fits(gate: Gate, max: number, share: QueryShare | undefined): boolean {
  return gate.active < max && (!share || (gate.shares.get(share.name) ?? 0) < share.max);
}

function take(gate: Gate, share: QueryShare | undefined): void {
  gate.active += 1;
  if (share) gate.shares.set(share.name, (gate.shares.get(share.name) ?? 0) + 1);
}

const gates = new WeakMap<object, Gate>();

export const defaultMaxConcurrentQueries = 8;

export async function acquireQuerySlot(
  pool: object,
  max: number,
  waitMs: number,
  signal: AbortSignal,
  share?: QueryShare,
): Promise<() => void> {
  let gate = gates.get(pool);
  if (!gate) {
    gate = { active: 0, shares: new Map(), waiting: [] };
    gates.set(pool, gate);
  }
  const owned = gate;
  if (!fits(owned, max, share)) {
    await new Promise<void>((resolve, reject) => {
      const onTurn = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const leave = () => {
        const at = owned.waiting.indexOf(waiter);
        if (at >= 0) owned.waiting.splice(at, 1);
      };
      const onAbort = () => {
        leave();
        clearTimeout(timer);
        reject(new DomainError('Aborted', 'query cancelled by the caller'));
      };
      const timer = setTimeout(() => {
        leave();
        signal.removeEventListener('abort', onAbort);
        // Name the limit that is reached now: the caller's share, or else all the slots.
        const shareFull = share !== undefined && (owned.shares.get(share.name) ?? 0) >= share.max;
        reject(
          new DomainError(
            'ResourceExhausted',
            shareFull
              ? `too many ${share.name} queries running at once (limit ${share.max} of ${max}); none finished within ${waitMs} ms, retry later`
              : `too many queries running at once (limit ${max}); none finished within ${waitMs} ms, retry later`,
          ),
        );
      }, waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      const waiter: Waiter = { max, share, onTurn };
      owned.waiting.push(waiter);
    });
  } else {
    take(owned, share);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    owned.active -= 1;
    if (share) owned.shares.set(share.name, (owned.shares.get(share.name) ?? 1) - 1);
    // Waiters are woken in arrival order while there is room under their own limit (callers of one pool
    // may pass different limits; a slot is only handed over within the limit of the one who takes it). A
    // waiter whose share is full is passed over, not waited for.
    for (let index = 0; index < owned.waiting.length; ) {
      const waiter = owned.waiting[index] as Waiter;
      if (owned.active >= waiter.max) break;
      if (!fits(owned, waiter.max, waiter.share)) {
        index += 1;
        continue;
      }
      take(owned, waiter.share);
      owned.waiting.splice(index, 1);
      waiter.onTurn();
    }
  };
}
