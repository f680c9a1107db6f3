/**
 * Machine killed → `part_offline` webhook.
 *
 *   node bench/part-offline.ts [--rounds 5]
 *
 * A cloud in a child process (embedded PostgreSQL, default liveness settings: offline after 30 s of
 * silence) with `part_online` and `part_offline` webhook triggers on a part, a real HTTP receiver in
 * this process, and a real `machine-server` process connected to the cloud (live machine connection).
 * Each round starts the machine-server, waits for its `part_online` webhook, SIGKILLs it and times
 * until the `part_offline` webhook arrives (the kernel closes the killed process's sockets, so the
 * cloud sees the live stream end). Then `--frozen-rounds` rounds SIGSTOP the machine-server instead:
 * its sockets stay open (like a network path that dies without a close), so only silence tells: the
 * live stream's silence timeout (6 s by default), or for machines without a live stream the offline
 * sweep after `partOfflineAfterMs` (30 s).
 */
import { parseArgs } from 'node:util';
import { startWebhookReceiver } from '../apps/cloud/test/triggers/events-fixtures.ts';
import {
  createCloudPart,
  credentialsFile,
  fakeSensors,
  setPartConfig,
} from '../apps/machine-server/test/support/cloud-machine-fixtures.ts';
import { startMachineProcess } from '../apps/machine-server/test/support/machine-process.ts';
import { startCloudProcess } from './lib/cloud-process.ts';
import { machineInfo, median, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, 'frozen-rounds': { type: 'string', default: '2' } },
});
const rounds = Number(args.rounds);
const frozenRounds = Number(args['frozen-rounds']);

const receiver = await startWebhookReceiver();
const cloud = await startCloudProcess();
try {
  const part = await createCloudPart(cloud, 'offline-bot');
  await setPartConfig(part, {
    components: fakeSensors(1),
    triggers: [
      {
        name: 'up',
        event: { type: 'part_online' },
        notifications: [{ type: 'webhook', value: `${receiver.url}/online` }],
      },
      {
        name: 'down',
        event: { type: 'part_offline' },
        notifications: [{ type: 'webhook', value: `${receiver.url}/offline` }],
      },
    ],
  });
  const count = (path: string) => receiver.requests.filter((r) => r.path === path).length;
  const toOffline: number[] = [];
  const frozenToOffline: number[] = [];
  for (let index = 1; index <= rounds + frozenRounds; index++) {
    const frozen = index > rounds;
    const machine = await startMachineProcess({ config: credentialsFile(cloud.url, part, '60s') });
    try {
      await machine.waitForLine(/machine connection open/, 60_000);
      await receiver.waitFor(index, (r) => r.path === '/online', 60_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = count('/offline');
      const killed = performance.now();
      // SIGSTOP: the process is frozen with its sockets open (like a dead network path): only silence tells.
      machine.child.kill(frozen ? 'SIGSTOP' : 'SIGKILL');
      const offline = await receiver.waitFor(before + 1, (r) => r.path === '/offline', 120_000);
      const seconds = ((offline[before]?.atMs ?? Number.NaN) - killed) / 1000;
      (frozen ? frozenToOffline : toOffline).push(seconds);
      console.log(
        `round ${index}: part_offline webhook ${round(seconds, 3)} s after ${frozen ? 'SIGSTOP' : 'SIGKILL'}`,
      );
      if (frozen) machine.child.kill('SIGKILL');
    } finally {
      await machine.stop();
      await machine.cleanup();
    }
  }
  writeResult({
    name: 'part-offline',
    machine: machineInfo(),
    parameters: { rounds, frozenRounds, partOfflineAfterMs: 30_000 },
    secondsToOffline: toOffline.map((v) => round(v, 3)),
    frozenSecondsToOffline: frozenToOffline.map((v) => round(v, 3)),
    figures: [
      {
        metric: 'machine-server SIGKILLed → part_offline webhook received: median / max',
        value: `${round(median(toOffline), 2)} / ${round(Math.max(...toOffline), 2)} s`,
        target: '≤ 30 s (offline after 30 s of silence)',
        met: Math.max(...toOffline) <= 31,
      },
      {
        metric: 'machine-server frozen (SIGSTOP, sockets stay open) → part_offline webhook: median / max',
        value: `${round(median(frozenToOffline), 2)} / ${round(Math.max(...frozenToOffline), 2)} s`,
        target: 'live stream silence timeout (6 s) + sweep',
      },
    ],
  });
} finally {
  await cloud.stop();
  await receiver.close();
}
