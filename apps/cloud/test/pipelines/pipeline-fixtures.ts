import type { CloudConfig } from '../../src/config/cloud-config.ts';

/** Scheduler passes every `intervalMs` (0: none, the test drives them) and runs due at their tick. */
export function withPipelineScheduler(intervalMs: number): (config: CloudConfig) => CloudConfig {
  return (config) => ({
    ...config,
    pipelines: {
      ...config.pipelines,
      schedulerIntervalMs: intervalMs,
      scheduler: { ...config.pipelines.scheduler, runDelayMs: 0 },
    },
  });
}
