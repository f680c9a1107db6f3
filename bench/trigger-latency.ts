/**
 * Trigger latency: a committed upload → the webhook request at a local receiver.
 *
 *   node bench/trigger-latency.ts [--samples 200] [--concurrent 8]
 *
 * A cloud in a child process (embedded PostgreSQL) with one `part_data_ingested` (tabular) webhook
 * trigger on a part; a real HTTP receiver in this process. Each sample sends one
 * `DataSyncService.DataCaptureUpload` (10 readings, its own component name) over gRPC and times until
 * the receiver has the webhook for that component. The upload commits between the request being sent
 * and the response arriving, so the two figures bracket "commit → webhook": from the response (a lower
 * bound; negative when the webhook arrives first) and from sending the upload (an upper bound, including
 * the upload's own processing). Sequential samples with a short random pause, then a loaded variant:
 * `--concurrent` uploaders at once.
 */

import { parseArgs } from 'node:util';
import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { dataSyncPb } from '@mcloud/protocol';
import { type ReceivedRequest, startWebhookReceiver } from '../apps/cloud/test/triggers/events-fixtures.ts';
import {
  createCloudPart,
  setPartConfig,
} from '../apps/machine-server/test/support/cloud-machine-fixtures.ts';
import { authenticate, benchClients } from './lib/clients.ts';
import { startCloudProcess } from './lib/cloud-process.ts';
import { machineInfo, median, percentile, round, writeResult } from './lib/report.ts';

const { values: args } = parseArgs({
  options: {
    samples: { type: 'string', default: '200' },
    concurrent: { type: 'string', default: '8' },
  },
});
const samples = Number(args.samples);
const concurrent = Number(args.concurrent);

const receiver = await startWebhookReceiver();
const cloud = await startCloudProcess();
try {
  const part = await createCloudPart(cloud, 'latency-bot');
  await setPartConfig(part, {
    components: [],
    triggers: [
      {
        name: 'latency',
        event: { type: 'part_data_ingested', data_ingested: { data_types: ['tabular'] } },
        notifications: [{ type: 'webhook', value: `${receiver.url}/hook` }],
      },
    ],
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const token = await authenticate(cloud.url, cloud.bootstrap);
  const { dataSync } = benchClients(cloud.url, token);

  const waiters = new Map<string, (request: ReceivedRequest) => void>();
  let seen = 0;
  const poll = setInterval(() => {
    for (; seen < receiver.requests.length; seen++) {
      const request = receiver.requests[seen] as ReceivedRequest;
      const name = (JSON.parse(request.body) as { component_name?: string }).component_name ?? '';
      waiters.get(name)?.(request);
      waiters.delete(name);
    }
  }, 1);

  let counter = 0;
  async function sample(): Promise<{ fromSend: number; fromResponse: number }> {
    const name = `sensor-${counter++}`;
    const arrived = new Promise<ReceivedRequest>((resolve, reject) => {
      waiters.set(name, resolve);
      setTimeout(() => reject(new Error(`no webhook for ${name} within 30 s`)), 30_000).unref();
    });
    const nowMs = Date.now();
    const request = create(dataSyncPb.DataCaptureUploadRequestSchema, {
      metadata: {
        partId: part.partId,
        componentType: 'rdk:component:sensor',
        componentName: name,
        methodName: 'Readings',
        type: dataSyncPb.DataType.TABULAR_SENSOR,
      },
      sensorContents: Array.from({ length: 10 }, (_, i) => ({
        metadata: {
          timeRequested: timestampFromMs(nowMs - 100 + i),
          timeReceived: timestampFromMs(nowMs - 99 + i),
        },
        data: { case: 'struct' as const, value: { readings: { temperature: 20 + i, humidity: 40 } } },
      })),
    });
    const sent = performance.now();
    await dataSync.dataCaptureUpload(request);
    const answered = performance.now();
    const webhook = await arrived;
    return { fromSend: webhook.atMs - sent, fromResponse: webhook.atMs - answered };
  }

  for (let i = 0; i < 20; i++) await sample(); // warm-up
  const sequential: { fromSend: number; fromResponse: number }[] = [];
  for (let i = 0; i < samples; i++) {
    sequential.push(await sample());
    await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 20));
  }
  const loaded: { fromSend: number; fromResponse: number }[] = [];
  const perWorker = Math.ceil(samples / concurrent);
  await Promise.all(
    Array.from({ length: concurrent }, async () => {
      for (let i = 0; i < perWorker; i++) loaded.push(await sample());
    }),
  );
  clearInterval(poll);

  const stats = (values: number[]) => ({
    p50: round(median(values), 1),
    p99: round(percentile(values, 99), 1),
  });
  const seqResponse = stats(sequential.map((s) => s.fromResponse));
  const seqSend = stats(sequential.map((s) => s.fromSend));
  const loadResponse = stats(loaded.map((s) => s.fromResponse));
  const loadSend = stats(loaded.map((s) => s.fromSend));
  console.log({ seqResponse, seqSend, loadResponse, loadSend });
  writeResult({
    name: 'trigger-latency',
    machine: machineInfo(),
    parameters: { samples, concurrent, readingsPerUpload: 10 },
    sequential: { fromResponse: seqResponse, fromSend: seqSend },
    loaded: { fromResponse: loadResponse, fromSend: loadSend },
    figures: [
      {
        metric:
          'upload committed → webhook at the receiver, sequential: p50 / p99 (from the upload response)',
        value: `${seqResponse.p50} / ${seqResponse.p99} ms`,
        target: 'p50 < 50 ms, p99 < 250 ms',
        met: seqResponse.p50 < 50 && seqResponse.p99 < 250,
      },
      {
        metric: 'upload sent → webhook at the receiver, sequential: p50 / p99 (upper bound)',
        value: `${seqSend.p50} / ${seqSend.p99} ms`,
        target: 'p50 < 50 ms, p99 < 250 ms',
        met: seqSend.p50 < 50 && seqSend.p99 < 250,
      },
      {
        metric: `upload sent → webhook, ${concurrent} concurrent uploaders: p50 / p99`,
        value: `${loadSend.p50} / ${loadSend.p99} ms`,
      },
    ],
  });
} finally {
  await cloud.stop();
  await receiver.close();
}
