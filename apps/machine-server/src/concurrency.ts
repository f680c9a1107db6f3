/** Small async helpers: bounded parallel map, deadlines, serialized execution. */

/** Runs `work` over `items` with at most `limit` in flight; never rejects (work handles its errors). */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export type DeadlineResult<T> =
  | { kind: 'done'; value: T }
  | { kind: 'failed'; error: unknown }
  | { kind: 'timeout' };

/**
 * Runs `work` with a signal aborted after `timeoutMs` (or when `parent` aborts) and resolves as soon as
 * either the work settles or the deadline passes; a late result is handed to `onLate`.
 */
export async function withDeadline<T>(
  timeoutMs: number,
  parent: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
  onLate?: (value: T) => void,
): Promise<DeadlineResult<T>> {
  const controller = new AbortController();
  const signal = parent ? AbortSignal.any([parent, controller.signal]) : controller.signal;
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const deadline = new Promise<DeadlineResult<T>>((resolve) => {
    const fire = () => {
      timedOut = true;
      controller.abort(new Error(`deadline of ${timeoutMs} ms exceeded`));
      resolve({ kind: 'timeout' });
    };
    timer = setTimeout(fire, timeoutMs);
    if (parent?.aborted) fire();
    else parent?.addEventListener('abort', fire, { once: true });
  });
  const running = (async () => work(signal))().then(
    (value): DeadlineResult<T> => {
      if (timedOut) onLate?.(value);
      return { kind: 'done', value };
    },
    (error: unknown): DeadlineResult<T> => ({ kind: 'failed', error }),
  );
  try {
    return await Promise.race([running, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Serializes async tasks: each starts after the previous one settled. */
export function createSerialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>) => {
    const run = tail.then(task, task);
    tail = run.catch(() => {});
    return run;
  };
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
