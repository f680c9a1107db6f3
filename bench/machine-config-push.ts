/**
 * Config change → applied on the machine: through the cloud's push (live machine connection) versus
 * the 15 s poll.
 *
 *   node bench/machine-config-push.ts [--push-samples 15] [--poll-samples 4]
 *
 * A cloud in a child process (embedded PostgreSQL) and a real `machine-server` process managed by it.
 * Each sample saves the part's configuration with one more fake sensor through AppService
 * (`UpdateRobotPart`) and times until the machine logs that sensor as built (parent reads its stdout).
 * Push: refresh_interval 60 s, so only the push can deliver within the sample. Poll: the machine
 * connection is off (MCLOUD_MACHINE_CONNECTION=off) and refresh_interval is the default 15 s; each
 * poll sample starts at a uniformly random point of the cycle (expected mean 7.5 s).
 */
import { parseArgs } from 'node:util';
import {
  createCloudPart,
  credentialsFile,
  fakeSensors,
  setPartConfig,
} from '../apps/machine-server/test/support/cloud-machine-fixtures.ts';
import {
  type MachineProcess,
  startMachineProcess,
} from '../apps/machine-server/test/support/machine-process.ts';
import { startCloudProcess } from './lib/cloud-process.ts';
import { machineInfo, median, percentile, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    'push-samples': { type: 'string', default: '15' },
    'poll-samples': { type: 'string', default: '4' },
  },
});
const pushSamples = Number(args['push-samples']);
const pollSamples = Number(args['poll-samples']);

const cloud = await startCloudProcess();
const machines: MachineProcess[] = [];
try {
  const measure = async (mode: 'push' | 'poll', samples: number): Promise<number[]> => {
    const part = await createCloudPart(cloud, `bench-${mode}`);
    await setPartConfig(part, { components: fakeSensors(1, 'base') });
    const machine = await startMachineProcess({
      config: credentialsFile(cloud.url, part, mode === 'push' ? '60s' : '15s'),
      args: ['-debug'],
      env: mode === 'poll' ? { MCLOUD_MACHINE_CONNECTION: 'off' } : {},
    });
    machines.push(machine);
    await machine.waitForLine(/initial configuration applied/, 60_000);
    if (mode === 'push') await machine.waitForLine(/machine connection open/, 30_000);
    // Poll: past the early first poll (at a fifth of the interval), then a random point of the cycle.
    else await new Promise((resolve) => setTimeout(resolve, 3500 + Math.random() * 15_000));
    const times: number[] = [];
    for (let i = 1; i <= samples; i++) {
      const mark = machine.lines.length;
      const started = performance.now();
      await setPartConfig(part, { components: [...fakeSensors(1, 'base'), ...fakeSensors(i, 'added')] });
      await machine.waitForLine(new RegExp(`resource built.*sensor/added${i - 1}"`), 40_000, mark);
      times.push(performance.now() - started);
      console.log(`${mode} ${i}: ${Math.round(times.at(-1) as number)} ms`);
      // Poll samples start at a uniformly random point of the 15 s cycle; push samples just pause.
      const pauseMs = mode === 'poll' ? Math.random() * 15_000 : 200 + Math.random() * 300;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    await machine.stop();
    return times;
  };
  const push = await measure('push', pushSamples);
  const poll = await measure('poll', pollSamples);
  writeResult({
    name: 'machine-config-push',
    machine: machineInfo(),
    parameters: { pushSamples, pollSamples, pollIntervalMs: 15_000 },
    pushMs: push.map((v) => round(v, 1)),
    pollMs: poll.map((v) => round(v, 0)),
    figures: [
      {
        metric: 'config change → applied via push, p50 / p95',
        value: `${round(median(push), 0)} / ${round(percentile(push, 95), 0)} ms`,
        target: 'p50 < 1 s',
        met: median(push) < 1000,
      },
      {
        metric: 'config change → applied via the 15 s poll, p50',
        value: `${round(median(poll) / 1000, 1)} s`,
      },
    ],
  });
} finally {
  for (const machine of machines) {
    await machine.stop();
    await machine.cleanup();
  }
  await cloud.stop();
}
