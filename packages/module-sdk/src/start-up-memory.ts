/**
 * Gives back, once, the memory that start-up needed and idling does not (the machine-server's bin and
 * `runModule` both use it). Loading ~360 modules and building the first configuration allocate fast enough that V8 grows its young generation to its
 * maximum (32 MiB on a machine with 16 GiB or more), and an idle machine-server then allocates too little
 * to ever collect it again: the pages stay resident for the life of the process. One memory-reducing
 * collection (V8's "last resort" full GC: compacts the old generation, shrinks the young one to 1 MiB,
 * releases the pooled pages) some seconds after start-up takes the idle RSS of a machine-server from
 * ~108 to ~87 MiB, of the example counter-sensor module from ~94 to ~74 MiB (bench/README.md). Under load V8 grows the young generation again as it always does,
 * so throughput is unchanged; the price is one pause of the event loop (tens to a few hundred ms,
 * logged) at a moment when nothing has been asked of the machine yet.
 *
 * `gc` is not a global unless node runs with --expose-gc, so it is taken from a fresh vm context with
 * the flag turned on just for that (the same way test runners do), and turned off again.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './logger.ts';

type GcFunction = (options: { type: 'major'; flavor: 'last-resort' }) => void;

function obtainGc(): GcFunction | undefined {
  const existing = (globalThis as { gc?: unknown }).gc;
  if (typeof existing === 'function') return existing as GcFunction;
  setFlagsFromString('--expose-gc');
  try {
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as GcFunction) : undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** Runs the memory-reducing collection now and logs what it gave back. */
export function releaseStartUpMemory(
  logger: Pick<Logger, 'debug' | 'info'>,
  level: 'info' | 'debug' = 'info',
): void {
  const gc = obtainGc();
  if (!gc) {
    logger.debug('start-up memory not released: this Node has no gc function');
    return;
  }
  const rssBefore = process.memoryUsage.rss();
  const began = performance.now();
  gc({ type: 'major', flavor: 'last-resort' });
  const pauseMs = Math.round(performance.now() - began);
  logger[level]('released start-up memory', {
    rss_mib_before: mib(rssBefore),
    rss_mib_after: mib(process.memoryUsage.rss()),
    pause_ms: pauseMs,
  });
}

/** Calls releaseStartUpMemory after `delayMs` (the timer does not keep the process alive); returns a cancel. */
export function scheduleStartUpMemoryRelease(
  delayMs: number,
  logger: Pick<Logger, 'debug' | 'info'>,
  level: 'info' | 'debug' = 'info',
): () => void {
  const timer = setTimeout(() => releaseStartUpMemory(logger, level), delayMs);
  timer.unref();
  return () => clearTimeout(timer);
}
