/**
 * Trigger delivery throughput: 1,000 deliveries recorded at once → webhooks at a local receiver.
 *
 *   node bench/trigger-throughput.ts [--deliveries 1000] [--rounds 3] [--profile]
 *
 * A cloud in a child process (embedded PostgreSQL, job queue concurrency 8) and a real HTTP receiver in
 * this process. Each round records `--deliveries` deliveries (1,000 triggers firing: each a
 * `part_data_ingested` webhook with the spec body, half of them signed with a Standard Webhooks secret)
 * in ONE transaction through `recordTriggerDelivery`, the same call the event side makes, then times
 * from that commit (the moment the jobs become visible) until every webhook has arrived: deliveries/s,
 * and p50 / p99 queue-to-receipt per delivery. Then it checks every row is `delivered` with one attempt.
 */
import { parseArgs } from 'node:util';
import { recordTriggerDelivery } from '../apps/cloud/src/domain/triggers/trigger-delivery.ts';
import { startReceiver } from '../apps/cloud/test/triggers/delivery-fixtures.ts';
import { createCloudPart } from '../apps/machine-server/test/support/cloud-machine-fixtures.ts';
import { openPool } from './lib/clients.ts';
import { findProfile, startCloudProcess } from './lib/cloud-process.ts';
import { printProfile, summarizeProfile } from './lib/profile-summary.ts';
import { machineInfo, median, percentile, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    profile: { type: 'boolean', default: false },
  },
});
const count = Number(args.deliveries);
const rounds = Number(args.rounds);
const secret = `whsec_${Buffer.alloc(32, 42).toString('base64')}`;

const receiver = await startReceiver();
const cloud = await startCloudProcess({ profile: args.profile });
const pool = openPool(cloud.databaseUrl, 2);
try {
  const part = await createCloudPart(cloud, 'throughput-bot');
  const placement = {
    organizationId: cloud.bootstrap.organization_id,
    locationId: cloud.bootstrap.location_id,
    robotId: part.robotId,
    partId: part.partId,
  };
  const results: Array<{ perSecond: number; p50: number; p99: number; drainMs: number }> = [];
  for (let round_ = 0; round_ <= rounds; round_++) {
    const warmUp = round_ === 0;
    const n = warmUp ? 100 : count;
    const firstRequest = receiver.requests.length;
    const client = await pool.connect();
    let committedAt = 0;
    try {
      await client.query('BEGIN');
      for (let i = 0; i < n; i++) {
        await recordTriggerDelivery(client, {
          ...placement,
          triggerName: `trigger-${i}`,
          eventType: 'part_data_ingested',
          notificationType: 'webhook',
          destination: `${receiver.url}/hook/${round_}/${i}`,
          signingSecret: i % 2 === 0 ? secret : undefined,
          facts: {
            kind: 'data',
            data: {
              componentName: `sensor-${i}`,
              componentType: 'rdk:component:sensor',
              methodName: 'Readings',
              dataType: 'tabular',
              minTimeReceived: new Date().toISOString(),
              maxTimeReceived: new Date().toISOString(),
              data: {
                metadata: { received_at: new Date().toISOString(), requested_at: new Date().toISOString() },
                data: { readings: { temperature: 20 + (i % 10), humidity: 40 } },
              },
            },
          },
          occurredAt: new Date(),
        });
      }
      await client.query('COMMIT');
      committedAt = Date.now();
    } finally {
      client.release();
    }
    const deadline = Date.now() + 300_000;
    while (receiver.requests.length - firstRequest < n) {
      if (Date.now() > deadline)
        throw new Error(`only ${receiver.requests.length - firstRequest} of ${n} arrived`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const arrivals = receiver.requests.slice(firstRequest).map((r) => r.atMs - committedAt);
    const drainMs = Math.max(...arrivals);
    if (warmUp) continue;
    const result = {
      perSecond: round((n / drainMs) * 1000, 0),
      p50: round(median(arrivals), 0),
      p99: round(percentile(arrivals, 99), 0),
      drainMs,
    };
    results.push(result);
    console.log(`round ${round_}: ${n} webhooks in ${drainMs} ms`, result);
  }
  const states = await pool.query<{ status: string; attempts: number; n: string }>(
    'SELECT status, attempt_count AS attempts, count(*)::text AS n FROM trigger_deliveries GROUP BY 1, 2',
  );
  console.log('delivery rows:', states.rows);
  const perSecond = median(results.map((r) => r.perSecond));
  const p50 = median(results.map((r) => r.p50));
  const p99 = median(results.map((r) => r.p99));
  if (args.profile) {
    await cloud.stop();
    const file = cloud.profileDir ? await findProfile(cloud.profileDir) : undefined;
    if (file) printProfile(await summarizeProfile(file));
    process.exit(0);
  }
  writeResult({
    name: 'trigger-throughput',
    machine: machineInfo(),
    parameters: { deliveries: count, rounds, signedShare: 0.5, jobConcurrency: 8 },
    rounds: results,
    rows: states.rows,
    figures: [
      {
        metric: `${count} deliveries recorded at once → webhooks received (median of ${rounds})`,
        value: `${round(perSecond, 0)} deliveries/s`,
      },
      {
        metric: 'queue (commit) → receipt per delivery: p50 / p99 (median of rounds)',
        value: `${p50} / ${p99} ms`,
      },
    ],
  });
} finally {
  await pool.end();
  await cloud.stop();
  await receiver.close();
}
