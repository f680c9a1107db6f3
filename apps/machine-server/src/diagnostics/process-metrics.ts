/**
 * Numeric metrics of this process and its resources, shared by FTDC and -output-telemetry: process CPU,
 * memory and event-loop delay, resource states, the host's network byte and packet counters (Linux
 * `/proc/net/dev`, loopback excluded), each data manager's capture/sync counters, and whatever the
 * extensions report (each module process's CPU and memory).
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isDataManager } from '../data/data-manager-api.ts';
import type { MachineExtension, MachineHost } from '../machine-host.ts';
import { formatResourceName } from '../resources/resource-name.ts';

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
    Object.assign(metrics, networkCounters());
    for (const name of host.resources.names()) {
      const resource = host.resources.get(name);
      if (!resource || !isDataManager(resource)) continue;
      for (const [key, value] of Object.entries(resource.status()))
        metrics[`data_manager.${formatResourceName(name)}.${snakeCase(key)}`] = value;
    }
    for (const extension of extensions) {
      for (const [key, value] of Object.entries(extension.diagnostics?.() ?? {}))
        metrics[`${extension.name}.${key}`] = value;
    }
    return metrics;
  };
  return Object.assign(sample, { close: () => loop.disable() });
}

/** Totals over the non-loopback interfaces of `/proc/net/dev`; nothing where that file does not exist. */
export function networkCounters(procNetDev = '/proc/net/dev'): Record<string, number> {
  let text: string;
  try {
    text = readFileSync(procNetDev, 'utf8');
  } catch {
    return {};
  }
  const totals = { rx_bytes: 0, rx_packets: 0, tx_bytes: 0, tx_packets: 0 };
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0 || line.slice(0, colon).trim() === 'lo') continue;
    const fields = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    totals.rx_bytes += fields[0] ?? 0;
    totals.rx_packets += fields[1] ?? 0;
    totals.tx_bytes += fields[8] ?? 0;
    totals.tx_packets += fields[9] ?? 0;
  }
  return Object.fromEntries(Object.entries(totals).map(([key, value]) => [`net.${key}`, value]));
}

function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
