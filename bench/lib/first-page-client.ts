/**
 * Child-process entry for bench/tabular-first-page.ts: the client that times TabularDataByFilter, in its
 * own process so its protobuf decoding and HTTP/2 work run beside the server (which stays in the bench
 * process, where its SQL can be captured) rather than on the same event loop. A request is timed from
 * the call until the decoded response is in hand, as an application using a Connect client sees it.
 *
 * IPC: receives `{ type: 'run', url, token, request (base64 TabularDataByFilterRequest), warmup, count }`,
 * answers `{ type: 'latencies', latencies, rows }` (or `{ type: 'error', message }`); `{ type: 'exit' }` ends it.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { dataPb } from '@mcloud/protocol';
import { benchClients } from './clients.ts';

export interface FirstPageRun {
  type: 'run';
  url: string;
  token: string;
  /** Base64 of a binary `TabularDataByFilterRequest`. */
  request: string;
  warmup: number;
  count: number;
}

export interface FirstPageTimings {
  type: 'latencies';
  latencies: number[];
  /** Rows in the last response. */
  rows: number;
}

if (!process.send) throw new Error('usage: forked by bench/tabular-first-page.ts');
const send = process.send.bind(process);
let clients: { url: string; token: string; data: ReturnType<typeof benchClients>['data'] } | undefined;

process.on('message', (message: FirstPageRun | { type: 'exit' }) => {
  if (message.type === 'exit') return process.exit(0);
  run(message).then(send, (error: unknown) =>
    send({ type: 'error', message: error instanceof Error ? error.message : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));

async function run(message: FirstPageRun): Promise<FirstPageTimings> {
  if (!clients || clients.url !== message.url || clients.token !== message.token) {
    clients = { url: message.url, token: message.token, data: benchClients(message.url, message.token).data };
  }
  const request = fromBinary(dataPb.TabularDataByFilterRequestSchema, Buffer.from(message.request, 'base64'));
  const { data } = clients;
  for (let i = 0; i < message.warmup; i++) await data.tabularDataByFilter(request);
  const latencies: number[] = [];
  let rows = 0;
  for (let i = 0; i < message.count; i++) {
    const began = performance.now();
    const response = await data.tabularDataByFilter(request);
    latencies.push(performance.now() - began);
    rows = response.data.length;
  }
  return { type: 'latencies', latencies, rows };
}
