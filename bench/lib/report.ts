import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';

export const benchDir = path.resolve(import.meta.dirname, '..');
export const resultsDir = path.join(benchDir, 'results');

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (p in 0..100) of an unsorted sample. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function fmtInt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
  date: string;
  gitCommit: string;
  /** 1-minute load average when the result was written: other work on the machine skews figures. */
  loadAverage1m: number;
}

export function machineInfo(): MachineInfo {
  let nproc = cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {}
  let gitCommit = 'unknown';
  try {
    gitCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: benchDir,
      encoding: 'utf8',
    }).trim();
  } catch {}
  return {
    nproc,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
    gitCommit,
    loadAverage1m: round(loadavg()[0] ?? 0, 2),
  };
}

/** One README row: what was measured, the figure, the target and whether it was met. */
export interface Figure {
  metric: string;
  value: string;
  target?: string;
  met?: boolean;
}

export interface BenchResult {
  name: string;
  machine: MachineInfo;
  figures: Figure[];
  [key: string]: unknown;
}

/** Writes `bench/results/<name>.json` and regenerates `bench/README.md` from every result on disk. */
export function writeResult(result: BenchResult): void {
  const file = path.join(resultsDir, `${result.name}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), file)}`);
  renderReadme();
}

const order = [
  'ingest-tabular',
  'tabular-first-page',
  'streaming-upload',
  'machine-data-capture',
  'machine-startup',
  'machine-reconfigure',
  'machine-config-push',
  'query-mql',
  'query-sql',
  'trigger-latency',
  'trigger-throughput',
  'part-offline',
  'pipelines',
];
const rank = (name: string) => {
  const base = order.findIndex((o) => name.startsWith(o));
  return base * 10 + (name === order[base] ? 0 : name.split('-server-').length);
};

export function renderReadme(): void {
  const results = readdirSync(resultsDir)
    .filter((f) => f.endsWith('.json') && !f.endsWith('-profiled.json'))
    .map((f) => JSON.parse(readFileSync(path.join(resultsDir, f), 'utf8')) as BenchResult)
    .sort((a, b) => rank(a.name) - rank(b.name));
  const template = readFileSync(path.join(benchDir, 'README.template.md'), 'utf8');
  const rows: string[] = [
    '| Benchmark | Metric | Latest | Target | Met | Machine |',
    '|---|---|---|---|---|---|',
  ];
  for (const result of results) {
    const m = result.machine;
    const machine = `${m.nproc} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.date.slice(0, 10)} @${m.gitCommit}`;
    for (const figure of result.figures) {
      const met = figure.met === undefined ? '' : figure.met ? 'yes' : '**no**';
      rows.push(
        `| ${result.name} | ${figure.metric} | ${figure.value} | ${figure.target ?? ''} | ${met} | ${machine} |`,
      );
    }
  }
  const machines = [
    ...new Set(
      results.map(
        (r) =>
          `${r.machine.cpuModel} × ${r.machine.nproc} (nproc), ${r.machine.memoryGiB} GiB RAM, ${r.machine.platform}`,
      ),
    ),
  ];
  const text = template
    .replace('{{TABLE}}', rows.join('\n'))
    .replace('{{MACHINES}}', machines.map((m) => `- ${m}`).join('\n'));
  writeFileSync(path.join(benchDir, 'README.md'), text);
}
