/**
 * Numbers about module processes for FTDC and -output-telemetry (MachineExtension.diagnostics):
 * per module `<name>.up` (1 when ready), `<name>.consecutive_failures`, and on Linux the process's
 * `<name>.rss_bytes` and `<name>.cpu_percent` since the previous sample (from /proc/<pid>/stat and
 * statm; clock ticks of 100 Hz and 4 KiB pages, the Linux defaults).
 */
import { readFileSync } from 'node:fs';
import type { ModuleStatus } from './managed-module.ts';

const ticksPerSecond = 100;
const pageBytes = 4096;

export type ModuleDiagnostics = (statuses: readonly ModuleStatus[]) => Record<string, number>;

export function createModuleDiagnostics(now: () => number = () => performance.now()): ModuleDiagnostics {
  const last = new Map<number, { ticks: number; atMs: number }>();
  return (statuses) => {
    const metrics: Record<string, number> = {};
    const seen = new Set<number>();
    for (const status of statuses) {
      metrics[`${status.name}.up`] = status.state === 'ready' ? 1 : 0;
      metrics[`${status.name}.consecutive_failures`] = status.consecutiveFailures;
      if (status.pid === undefined) continue;
      const usage = readProcessUsage(status.pid);
      if (!usage) continue;
      seen.add(status.pid);
      metrics[`${status.name}.rss_bytes`] = usage.rssBytes;
      const atMs = now();
      const previous = last.get(status.pid);
      if (previous && atMs > previous.atMs) {
        const cpuSeconds = (usage.ticks - previous.ticks) / ticksPerSecond;
        metrics[`${status.name}.cpu_percent`] = (cpuSeconds / ((atMs - previous.atMs) / 1000)) * 100;
      }
      last.set(status.pid, { ticks: usage.ticks, atMs });
    }
    for (const pid of last.keys()) if (!seen.has(pid)) last.delete(pid);
    return metrics;
  };
}

function readProcessUsage(pid: number): { ticks: number; rssBytes: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14 and 15)
    const resident = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    if (!Number.isFinite(ticks) || !Number.isFinite(resident)) return undefined;
    return { ticks, rssBytes: resident * pageBytes };
  } catch {
    return undefined;
  }
}
