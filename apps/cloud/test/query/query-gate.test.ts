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

test('query gate: a share bounds its callers, and its full share does not hold up the others', async () => {
  const pool = {};
  const signal = new AbortController().signal;
  const pipelines = { name: 'pipeline-runs', max: 2 };
  const running = await Promise.all([1, 2].map(() => acquireQuerySlot(pool, 8, 1000, signal, pipelines)));
  // A backfill's further runs wait for the share, not for the pool.
  const started: string[] = [];
  const queued = [1, 2, 3].map((n) =>
    acquireQuerySlot(pool, 8, 5000, signal, pipelines).then((release) => {
      started.push(`pipeline-${n}`);
      return release;
    }),
  );
  // Every other slot goes to interactive queries, at once, although pipeline runs queued first.
  const interactive = await Promise.all([1, 2, 3, 4, 5, 6].map(() => acquireQuerySlot(pool, 8, 50, signal)));
  await assert.rejects(acquireQuerySlot(pool, 8, 30, signal), /too many queries running at once \(limit 8\)/);
  // An interactive slot freed goes to the next interactive waiter, never to a pipeline run beyond its share.
  const waiting = acquireQuerySlot(pool, 8, 5000, signal);
  (interactive[0] as () => void)();
  (await waiting)();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(started, []);
  // A pipeline slot freed goes to the next pipeline run.
  (running[0] as () => void)();
  const next = await queued[0];
  assert.deepEqual(started, ['pipeline-1']);
  await assert.rejects(
    acquireQuerySlot(pool, 8, 30, signal, pipelines),
    /too many pipeline-runs queries running at once \(limit 2 of 8\)/,
  );
  (running[1] as () => void)();
  next?.();
  (await queued[1])?.();
  (await queued[2])?.();
  assert.deepEqual(started, ['pipeline-1', 'pipeline-2', 'pipeline-3']);
  for (const release of interactive) release();
});
