import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { addJob, createJobQueue, type JobContext } from '../../src/infra/jobs/job-queue.ts';
import { createDatabase, type Database, withTransaction } from '../../src/infra/postgres/database.ts';
import { createTestDatabase, type TestDatabase } from '../support/test-database.ts';

let database: TestDatabase;
let db: Database;

before(async () => {
  database = await createTestDatabase();
  db = createDatabase(database.url);
});
after(async () => {
  await db.end();
  await database.drop();
});

function waitFor<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      const value = check();
      if (value !== undefined) resolve(value);
      else if (Date.now() - started > timeoutMs) reject(new Error('timed out'));
      else setTimeout(tick, 10);
    };
    tick();
  });
}

test('jobs added in a committed transaction run once; rolled-back ones never; throwing handlers are retried', async () => {
  const seen: Array<{ payload: unknown; context: JobContext }> = [];
  let failuresLeft = 1;
  const queue = createJobQueue({ connectionString: database.url, pollIntervalMs: 100 });
  queue.register('test.record', async (payload, context) => {
    seen.push({ payload, context });
  });
  queue.register('test.flaky', async (payload, context) => {
    if (failuresLeft-- > 0) throw new Error('first attempt fails');
    seen.push({ payload, context });
  });
  await queue.start();
  try {
    await withTransaction(db, (tx) => addJob(tx, 'test.record', { n: 1 }));
    await assert.rejects(
      withTransaction(db, async (tx) => {
        await addJob(tx, 'test.record', { n: 2 });
        throw new Error('roll back');
      }),
    );
    const first = await waitFor(() => seen.find((s) => (s.payload as { n: number }).n === 1));
    assert.equal(first.context.attempt, 1);
    assert.equal(first.context.signal.aborted, false);
    // graphile-worker's retry delay after the first failure is exp(1) ≈ 2.7 s.
    await withTransaction(db, (tx) => addJob(tx, 'test.flaky', { n: 3 }, { maxAttempts: 3 }));
    const retried = await waitFor(() => seen.find((s) => (s.payload as { n: number }).n === 3));
    assert.equal(retried.context.attempt, 2);
    assert.equal(retried.context.maxAttempts, 3);
    assert.equal(seen.filter((s) => (s.payload as { n: number }).n === 1).length, 1);
    assert.equal(
      seen.some((s) => (s.payload as { n: number }).n === 2),
      false,
    );
  } finally {
    await queue.stop();
  }
});

test('runAt delays a job; a job key replaces the pending job; jobs left by a stopped queue run after restart', async () => {
  const seen: unknown[] = [];
  const makeQueue = () => {
    const queue = createJobQueue({ connectionString: database.url, pollIntervalMs: 100 });
    queue.register('test.later', async (payload) => {
      seen.push(payload);
    });
    return queue;
  };
  const runAt = new Date(Date.now() + 600);
  await addJob(db, 'test.later', { v: 'old' }, { jobKey: 'k', runAt });
  await addJob(db, 'test.later', { v: 'new' }, { jobKey: 'k', runAt });
  const queue = makeQueue();
  await queue.start();
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(seen, []);
  await waitFor(() => (seen.length ? true : undefined));
  assert.deepEqual(seen, [{ v: 'new' }]);
  await queue.stop();
  await addJob(db, 'test.later', { v: 'while stopped' });
  const restarted = makeQueue();
  await restarted.start();
  await waitFor(() => (seen.length === 2 ? true : undefined));
  assert.deepEqual(seen[1], { v: 'while stopped' });
  await restarted.stop();
});

test('registering after start or twice is refused', async () => {
  const queue = createJobQueue({ connectionString: database.url });
  queue.register('a', async () => {});
  assert.throws(() => queue.register('a', async () => {}), /registered twice/);
  await queue.start();
  assert.throws(() => queue.register('b', async () => {}), /after the queue started/);
  await queue.stop();
});
