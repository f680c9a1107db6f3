/**
 * A FIFO of at most `capacity` items between one producer and one consumer: `push` waits while the
 * queue is full (backpressure, nothing is dropped), `shift` waits while it is empty and answers
 * undefined once the queue is closed and drained.
 */
export interface BoundedQueue<T> {
  push(item: T): Promise<void>;
  shift(): Promise<T | undefined>;
  /** No more pushes; pending and future shifts drain what is left, then get undefined. */
  close(): void;
  readonly size: number;
}

export function createBoundedQueue<T>(capacity: number): BoundedQueue<T> {
  const items: T[] = [];
  let closed = false;
  let waitingConsumer: (() => void) | undefined;
  const waitingProducers: (() => void)[] = [];

  const wakeConsumer = () => {
    const wake = waitingConsumer;
    waitingConsumer = undefined;
    wake?.();
  };

  return {
    get size() {
      return items.length;
    },
    async push(item) {
      while (items.length >= capacity && !closed) {
        await new Promise<void>((resolve) => waitingProducers.push(resolve));
      }
      if (closed) throw new Error('the capture queue is closed');
      items.push(item);
      wakeConsumer();
    },
    async shift() {
      while (items.length === 0) {
        if (closed) return undefined;
        await new Promise<void>((resolve) => {
          waitingConsumer = resolve;
        });
      }
      const item = items.shift() as T;
      waitingProducers.shift()?.();
      return item;
    },
    close() {
      closed = true;
      wakeConsumer();
      for (const wake of waitingProducers.splice(0)) wake();
    },
  };
}
