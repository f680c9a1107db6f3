import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acquireQuerySlot } from '../../src/domain/data/query-access/query-gate.ts';

// Slots are released late (after the ROLLBACK of a finished query), so callers with a larger limit may
// still hold slots when a caller with a smaller one arrives: a freed slot goes to a waiter only within
// the waiter's own limit.
test('query gate: a waiter is woken only under its own limit, in arrival order', async () => {
  const pool = {};
  const signal = new AbortController().signal;
  const wide = await Promise.all([1, 2, 3].map(() => acquireQuerySlot(pool, 8, 1000, signal)));
  const order: string[] = [];
  const narrow = ['x', 'y'].map((name) =>
    acquireQuerySlot(pool, 1, 5000, signal).then((release) => {
      order.push(name);
      return release;
    }),
  );
  (wide[0] as () => void)();
  (wide[1] as () => void)();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(order, [], 'two slots still taken: no narrow waiter may start');
  (wide[2] as () => void)();
  const releaseX = await narrow[0];
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(order, ['x']);
  releaseX?.();
  (await narrow[1])?.();
  assert.deepEqual(order, ['x', 'y']);
  (await acquireQuerySlot(pool, 1, 30, signal))();
});
