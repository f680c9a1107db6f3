/**
 * The web options reach the machine API of a real process (their behaviour in detail is tested on the
 * API itself in test/api/machine-api-network.test.ts): a config with a TLS certificate serves HTTPS,
 * `-no-tls` serves plain HTTP with the same config, `-webprofile` adds /debug/graph and the profiler,
 * `-shareddir` serves its files under /static/; the machine answers mDNS queries on the real port 5353
 * unless `-disable-mdns`.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createSelfSignedCertificate, type SelfSignedCertificate } from '@mcloud/rpc-server/testing';
import makeMdns from 'multicast-dns';
import { type MachineProcess, startMachineProcess } from '../support/machine-process.ts';

let certificate: SelfSignedCertificate;
let shared: string;
const machines: MachineProcess[] = [];

before(async () => {
  certificate = await createSelfSignedCertificate();
  shared = await mkdtemp(path.join(tmpdir(), 'ms-shareddir-'));
  await writeFile(path.join(shared, 'hello.txt'), 'from the shared dir');
});
after(async () => {
  for (const machine of machines) {
    await machine.stop(5000);
    await machine.cleanup();
  }
  await certificate?.remove();
  await rm(shared, { recursive: true, force: true });
});

async function servingUrl(args: string[], network: object = {}): Promise<string> {
  const machine = await startMachineProcess({
    config: {
      network: {
        bind_address: '127.0.0.1:0',
        tls_cert_file: certificate.certFile,
        tls_key_file: certificate.keyFile,
        ...network,
      },
      components: [{ name: 'thermo', api: 'rdk:component:sensor', model: 'fake' }],
    },
    args,
  });
  machines.push(machine);
  const serving = await machine.waitForLine(/\tserving\t/, 20_000);
  await machine.waitForLine(/machine-server ready/);
  return (JSON.parse(serving.split('\t').at(-1) as string) as { url: string }).url;
}

test('TLS by default; -no-tls, -webprofile and -shareddir change what the process serves', async () => {
  assert.match(await servingUrl(['-disable-mdns']), /^https:\/\/127\.0\.0\.1:\d+$/);

  const url = await servingUrl(['-disable-mdns', '-no-tls', '-webprofile', '-shareddir', shared]);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const graph = await fetch(`${url}/debug/graph`);
  assert.equal(graph.status, 200);
  assert.match(
    await graph.text(),
    /"rdk:component:sensor\/thermo" \[label="rdk:component:sensor\/thermo\\nready"/,
  );
  const heap = await fetch(`${url}/debug/pprof/heap`);
  assert.equal(heap.status, 200);
  await heap.body?.cancel();
  assert.equal(await (await fetch(`${url}/static/hello.txt`)).text(), 'from the shared dir');

  const plain = await servingUrl(['-disable-mdns', '-no-tls']);
  assert.equal((await fetch(`${plain}/debug/graph`)).status, 404, 'no profiler without -webprofile');
  assert.equal((await fetch(`${plain}/static/hello.txt`)).status, 404, 'no static files without -shareddir');
});

/** The SRV port the instance `<label>._rpc._tcp.local` answers with on port 5353, if any within 2 s. */
async function mdnsPort(label: string): Promise<number | undefined> {
  const client = makeMdns({ reuseAddr: true, loopback: true, bind: '0.0.0.0', interface: '127.0.0.1' });
  try {
    await new Promise((resolve) => client.once('ready', resolve));
    const instance = `${label}._rpc._tcp.local`;
    const found = new Promise<number>((resolve) => {
      client.on('response', (response) => {
        const srv = [...response.answers, ...response.additionals].find(
          (record) => record.type === 'SRV' && record.name === instance,
        );
        if (srv) resolve(((srv as { data?: unknown }).data as { port: number }).port);
      });
    });
    const ask = () => client.query({ questions: [{ name: '_rpc._tcp.local', type: 'PTR' }] });
    ask();
    const again = setInterval(ask, 500);
    const timeout = new Promise<undefined>((resolve) => setTimeout(resolve, 2000, undefined));
    const port = await Promise.race([found, timeout]);
    clearInterval(again);
    return port;
  } finally {
    client.destroy();
  }
}

test('the machine is advertised over mDNS by default, not with -disable-mdns', async () => {
  const label = `flags-${process.pid}-${Date.now()}`;
  const advertised = await servingUrl(['-no-tls'], { fqdn: `${label}.example` });
  assert.equal(await mdnsPort(`${label}-example`), Number(new URL(advertised).port));
  const quiet = `quiet-${process.pid}-${Date.now()}`;
  await servingUrl(['-no-tls', '-disable-mdns'], { fqdn: `${quiet}.example` });
  assert.equal(await mdnsPort(`${quiet}-example`), undefined);
});
