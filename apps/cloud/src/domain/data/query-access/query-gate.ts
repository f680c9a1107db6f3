import { DomainError } from '../../errors.ts';

/**
 * At most `max` user queries per database pool run at once; the others wait (up to their time budget)
 * for a slot. User SQL/MQL thus never takes every connection of the pool the rest of the cloud needs.
 * The gate belongs to the pool object (a WeakMap), so every caller of the same pool shares it.
 */

interface Gate {
  active: number;
  waiting: (() => void)[];
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
        const at = owned.waiting.indexOf(onTurn);
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
      owned.waiting.push(onTurn);
    });
  } else {
    owned.active += 1;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const next = owned.waiting.shift();
    // The slot passes straight to the next waiter; otherwise it is freed.
    if (next) next();
    else owned.active -= 1;
  };
}
