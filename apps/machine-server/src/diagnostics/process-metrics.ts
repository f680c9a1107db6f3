/** Numeric metrics of this process and its resources, shared by FTDC and -output-telemetry. */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { MachineExtension, MachineHost } from '../machine-host.ts';

export type MetricsSampler = () => Record<string, number>;

export function createMetricsSampler(
  host: MachineHost,
  extensions: readonly MachineExtension[],
): MetricsSampler & { close(): void } {
  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  let lastCpu = process.cpuUsage();
  let lastAt = performance.now();
  const sample = () => {
    const cpu = process.cpuUsage(lastCpu);
    const now = performance.now();
    const elapsedUs = Math.max(1, (now - lastAt) * 1000);
    lastCpu = process.cpuUsage();
    lastAt = now;
    const memory = process.memoryUsage();
    const metrics: Record<string, number> = {
      'process.cpu_user_percent': (cpu.user / elapsedUs) * 100,
      'process.cpu_system_percent': (cpu.system / elapsedUs) * 100,
      'process.rss_bytes': memory.rss,
      'process.heap_used_bytes': memory.heapUsed,
      'process.heap_total_bytes': memory.heapTotal,
      'process.external_bytes': memory.external,
      'process.event_loop_delay_p99_ms': loop.percentile(99) / 1e6,
    };
    loop.reset();
    const states: Record<string, number> = {
      ready: 0,
      unhealthy: 0,
      configuring: 0,
      unconfigured: 0,
      removing: 0,
    };
    for (const status of host.status().resources) states[status.state] = (states[status.state] ?? 0) + 1;
    for (const [state, count] of Object.entries(states)) metrics[`resources.${state}`] = count;
    for (const extension of extensions) {
      for (const [key, value] of Object.entries(extension.diagnostics?.() ?? {}))
        metrics[`${extension.name}.${key}`] = value;
    }
    return metrics;
  };
  return Object.assign(sample, { close: () => loop.disable() });
}
