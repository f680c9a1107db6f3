import { type PassResult, type PipelineSchedulerDeps, runSchedulerPass } from './pipeline-scheduler.ts';

/**
 * Runs scheduler passes (pipeline-scheduler.ts) on a timer in every cloud replica: one at start, then
 * one `intervalMs` after the previous one ended (passes never overlap within a replica; across replicas
 * the pass itself is safe). A failing pass is reported and the next one runs as usual; `stop()` ends the
 * timer and waits for a pass in progress. `intervalMs` 0 disables the loop (a replica that only executes
 * runs; tests that drive passes themselves).
 */
export interface PipelineSchedulerLoop {
  start(): void;
  stop(): Promise<void>;
}

export interface PipelineSchedulerLoopOptions {
  deps: PipelineSchedulerDeps;
  intervalMs: number;
  onError: (error: unknown) => void;
  /** Called after each successful pass (tests, metrics). */
  onPass?: (result: PassResult) => void;
}

export function createPipelineSchedulerLoop(options: PipelineSchedulerLoopOptions): PipelineSchedulerLoop {
  const closing = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  const pass = async () => {
    try {
      const result = await runSchedulerPass(options.deps, closing.signal);
      options.onPass?.(result);
    } catch (error) {
      if (!closing.signal.aborted) options.onError(error);
    }
  };
  const runNow = () => {
    timer = undefined;
    current = pass().finally(() => {
      current = undefined;
      if (!closing.signal.aborted) scheduleNext();
    });
  };
  const scheduleNext = () => {
    timer = setTimeout(runNow, options.intervalMs);
    timer.unref();
  };

  return {
    start() {
      if (options.intervalMs === 0 || closing.signal.aborted || timer || current) return;
      runNow();
    },
    async stop() {
      closing.abort();
      if (timer) clearTimeout(timer);
      timer = undefined;
      await current;
    },
  };
}
