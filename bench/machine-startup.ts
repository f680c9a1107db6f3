/**
 * machine-server cold start and idle memory.
 *
 *   node bench/machine-startup.ts [--rounds 5] [--resources 50] [--idle-seconds 15]
 *
 * Start: a `machine-server` process (the real bin) with a local config of `--resources` built-in
 * resources (fake sensors, cameras, motors and generics; a quarter depend on another one, so the graph
 * has two levels); time from spawn to the "machine-server ready" log line (every resource built) and to
 * the first log line (Node start-up + module loading). Three kinds of start, alternated in every round so
 * that load on the shared machine hits them alike:
 *   - first start: a fresh VIAM_HOME, so Node's compile cache (`$VIAM_HOME/compile-cache`) is empty;
 *   - restart: the VIAM_HOME of an earlier run, compile cache warm (every start after the first);
 *   - restart without the cache (`NODE_DISABLE_COMPILE_CACHE=1`): what every start cost before.
 * Idle memory: RSS (VmRSS of the process) 1 s after "ready" and after `--idle-seconds` of idling (the
 * start-up memory release runs 10 s after ready), with no resources and with `--resources` resources,
 * FTDC on (the default), after a restart (warm cache) and without the cache; the release's pause.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startMachineProcess } from '../apps/machine-server/test/support/machine-process.ts';
import { machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    resources: { type: 'string', default: '50' },
    'idle-seconds': { type: 'string', default: '15' },
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

type StartKind = 'first' | 'restart' | 'noCache';
const startKinds: readonly StartKind[] = ['first', 'restart', 'noCache'];
const noCacheEnv = { NODE_DISABLE_COMPILE_CACHE: '1' };
/** Kept across starts: its compile cache is filled by the warm-up start below. */
const warmDir = await mkdtemp(path.join(tmpdir(), 'machine-startup-warm-'));

async function start(kind: StartKind, count: number, extraArgs: readonly string[] = []) {
  return startMachineProcess({
    config: { components: resources(count) },
    args: extraArgs,
    ...(kind === 'first' ? {} : { dir: warmDir }),
    ...(kind === 'noCache' ? { env: noCacheEnv } : {}),
  });
}

const warmUp = await start('restart', resourceCount);
await warmUp.waitForLine(/machine-server ready/, 60_000);
await warmUp.stop();

const toReady: Record<StartKind, number[]> = { first: [], restart: [], noCache: [] };
const toFirstLine: Record<StartKind, number[]> = { first: [], restart: [], noCache: [] };
const loadBefore = round(loadavg()[0] ?? 0, 2);
for (let round = 0; round < rounds; round++) {
  for (const kind of startKinds) {
    const started = performance.now();
    const machine = await start(kind, resourceCount);
    await machine.waitForLine(/./, 30_000);
    toFirstLine[kind].push(performance.now() - started);
    await machine.waitForLine(/machine-server ready/, 60_000);
    toReady[kind].push(performance.now() - started);
    const applied = machine.lines.find((line) => /initial configuration applied/.test(line)) ?? '';
    if (!applied.includes(`"built":${resourceCount},"failed":0`))
      throw new Error(`not every resource was built: ${applied}`);
    await machine.stop();
    await machine.cleanup();
  }
  const line = startKinds.map((kind) => `${kind} ${Math.round(toReady[kind].at(-1) as number)} ms`);
  console.log(`round ${round + 1}: ready after ${line.join(', ')}`);
}

const idle: Record<string, number> = {};
/** RSS 1 s after "ready", before the start-up memory release (module-sdk start-up-memory.ts, 10 s after). */
const justReady: Record<string, number> = {};
const releasePauseMs: number[] = [];
for (const [label, kind, count] of [
  ['0', 'restart', 0],
  [`${resourceCount}`, 'restart', resourceCount],
  ['0-noCache', 'noCache', 0],
] as const) {
  const machine = await start(kind, count, ['-ftdc=true']);
  await machine.waitForLine(/machine-server ready/, 60_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  justReady[label] = await rssBytes(machine.child.pid as number);
  await new Promise((resolve) => setTimeout(resolve, (idleSeconds - 1) * 1000));
  idle[label] = await rssBytes(machine.child.pid as number);
  const released = machine.lines.find((line) => /released start-up memory/.test(line));
  const pause = released ? /"pause_ms":(\d+)/.exec(released) : null;
  if (pause) releasePauseMs.push(Number(pause[1]));
  await machine.stop();
  await machine.cleanup();
  console.log(
    `idle RSS, ${label}: ${round((justReady[label] as number) / 2 ** 20, 1)} MiB 1 s after ready, ${round((idle[label] as number) / 2 ** 20, 1)} MiB after ${idleSeconds} s (${released ?? 'no release logged'})`,
  );
}
await rm(warmDir, { recursive: true, force: true });

const ms = (values: number[]) => `${round(median(values), 0)} ms`;
const mib = (label: string, from = idle) => `${round((from[label] as number) / 2 ** 20, 1)} MiB`;
writeResult({
  name: 'machine-startup',
  machine: machineInfo(),
  parameters: { rounds, resourceCount, idleSeconds },
  loadAverage1mBefore: loadBefore,
  coldStartMs: Object.fromEntries(
    startKinds.map((kind) => [
      kind,
      {
        toReady: toReady[kind].map((v) => round(v, 0)),
        toFirstLogLine: toFirstLine[kind].map((v) => round(v, 0)),
      },
    ]),
  ),
  idleRssBytes: idle,
  rssBytesOneSecondAfterReady: justReady,
  startUpMemoryReleasePauseMs: releasePauseMs,
  figures: [
    {
      metric: `start to serving, ${resourceCount} resources, restart (compile cache warm), p50 of ${rounds}`,
      value: `${ms(toReady.restart)} (first line ${ms(toFirstLine.restart)})`,
    },
    {
      metric: `start to serving, ${resourceCount} resources, first start (fresh VIAM_HOME), p50 of ${rounds}`,
      value: `${ms(toReady.first)} (first line ${ms(toFirstLine.first)})`,
    },
    {
      metric: `start to serving, ${resourceCount} resources, without the compile cache, p50 of ${rounds}`,
      value: `${ms(toReady.noCache)} (first line ${ms(toFirstLine.noCache)})`,
    },
    {
      metric: `idle RSS after ${idleSeconds} s, no resources (restart / without the compile cache)`,
      value: `${mib('0')} / ${mib('0-noCache')}`,
    },
    {
      metric: `idle RSS after ${idleSeconds} s, ${resourceCount} resources (restart)`,
      value: mib(`${resourceCount}`),
    },
    {
      metric: `RSS 1 s after ready, before the start-up memory release (no resources / ${resourceCount} resources)`,
      value: `${mib('0', justReady)} / ${mib(`${resourceCount}`, justReady)}`,
    },
    {
      metric: 'start-up memory release: event-loop pause (median)',
      value: `${round(median(releasePauseMs), 0)} ms`,
    },
  ],
});
