import { DomainError } from '../../errors.ts';

/**
 * At most `max` user queries per database pool run at once; the others wait (up to their time budget)
 * for a slot. User SQL/MQL thus never takes every connection of the pool the rest of the cloud needs.
 * The gate belongs to the pool object (a WeakMap), so every caller of the same pool shares it.
 */

interface Waiter {
  max: number;
  onTurn: () => void;
}

interface Gate {
  active: number;
  waiting: Waiter[];
}

const gates = new WeakMap<object, Gate>();

export const defaultMaxConcurrentQueries = 8;

export async function acquireQuerySlot(
  pool: object,
  max: number,
  waitMs: number,
  signal: AbortSignal,
): Promise<() => void> {
  let gate = gates.get(pool);
  if (!gate) {
    gate = { active: 0, waiting: [] };
    gates.set(pool, gate);
  }
  const owned = gate;
  if (owned.active >= max) {
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
        reject(
          new DomainError(
            'ResourceExhausted',
            `too many queries running at once (limit ${max}); none finished within ${waitMs} ms, retry later`,
          ),
        );
      }, waitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      const waiter = { max, onTurn };
      owned.waiting.push(waiter);
    });
  } else {
    owned.active += 1;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    owned.active -= 1;
    // Waiters are woken in order while there is room under their own limit (callers of one pool may
    // pass different limits; a slot is only handed over within the limit of the one who takes it).
    while (owned.waiting.length > 0 && owned.active < (owned.waiting[0] as Waiter).max) {
      owned.active += 1;
      (owned.waiting.shift() as Waiter).onTurn();
    }
  };
}
