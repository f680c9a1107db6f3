/**
 * machine-server cold start and idle memory.
 *
 *   node bench/machine-startup.ts [--rounds 5] [--resources 50] [--idle-seconds 10]
 *
 * Cold start: a fresh `machine-server` process (its own VIAM_HOME) with a local config of
 * `--resources` built-in resources (fake sensors, cameras, motors and generics; a quarter depend on
 * another one, so the graph has two levels); time from spawn to the "machine-server ready" log line
 * (every resource built) and to the first log line (Node start-up + module loading).
 * Idle memory: RSS (VmRSS of the process) after `--idle-seconds` of idling, with no resources and
 * with `--resources` resources, FTDC on (the default).
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { startMachineProcess } from '../apps/machine-server/test/support/machine-process.ts';
import { machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    resources: { type: 'string', default: '50' },
    'idle-seconds': { type: 'string', default: '10' },
  },
});
const rounds = Number(args.rounds);
const resourceCount = Number(args.resources);
const idleSeconds = Number(args['idle-seconds']);

function resources(count: number): object[] {
  const kinds = ['sensor', 'camera', 'motor', 'generic'];
  return Array.from({ length: count }, (_, i) => {
    const kind = kinds[i % kinds.length] as string;
    const entry: Record<string, unknown> = {
      name: `${kind}${i}`,
      api: `rdk:component:${kind}`,
      model: 'fake',
    };
    if (i % 4 === 3 && i > 0) entry.depends_on = [`sensor${i - 3}`];
    return entry;
  });
}

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

const toReady: number[] = [];
const toFirstLine: number[] = [];
for (let round = 0; round < rounds; round++) {
  const started = performance.now();
  const machine = await startMachineProcess({ config: { components: resources(resourceCount) } });
  await machine.waitForLine(/./, 30_000);
  toFirstLine.push(performance.now() - started);
  const ready = await machine.waitForLine(/machine-server ready/, 60_000);
  toReady.push(performance.now() - started);
  if (!/"resources":50|"resources":\d+/.test(ready)) throw new Error(`unexpected ready line: ${ready}`);
  const applied = machine.lines.find((line) => /initial configuration applied/.test(line)) ?? '';
  if (!applied.includes(`"built":${resourceCount},"failed":0`))
    throw new Error(`not every resource was built: ${applied}`);
  await machine.stop();
  await machine.cleanup();
  console.log(`round ${round + 1}: ready after ${Math.round(toReady.at(-1) as number)} ms`);
}

const idle: Record<string, number> = {};
for (const count of [0, resourceCount]) {
  const machine = await startMachineProcess({
    config: { components: resources(count) },
    args: ['-ftdc=true'],
  });
  await machine.waitForLine(/machine-server ready/, 60_000);
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  idle[`${count}`] = await rssBytes(machine.child.pid as number);
  await machine.stop();
  await machine.cleanup();
  console.log(`idle RSS with ${count} resources: ${round((idle[`${count}`] as number) / 2 ** 20, 1)} MiB`);
}

const readyP50 = median(toReady);
writeResult({
  name: 'machine-startup',
  machine: machineInfo(),
  parameters: { rounds, resourceCount, idleSeconds },
  coldStartMs: {
    toReady: toReady.map((v) => round(v, 0)),
    toFirstLogLine: toFirstLine.map((v) => round(v, 0)),
  },
  idleRssBytes: idle,
  figures: [
    {
      metric: `cold start to serving, ${resourceCount} resources (p50 of ${rounds})`,
      value: `${round(readyP50, 0)} ms`,
    },
    {
      metric: 'of which process start to first log line (p50)',
      value: `${round(median(toFirstLine), 0)} ms`,
    },
    { metric: 'idle RSS, no resources', value: `${round((idle['0'] as number) / 2 ** 20, 1)} MiB` },
    {
      metric: `idle RSS, ${resourceCount} resources`,
      value: `${round((idle[`${resourceCount}`] as number) / 2 ** 20, 1)} MiB`,
    },
  ],
});
