import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Code, type ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { authPb, sensorPb } from '@mcloud/protocol';
import {
  createSelfSignedCertificate,
  grpcStatusOverHttp2,
  type SelfSignedCertificate,
} from '@mcloud/rpc-server/testing';
import makeMdns from 'multicast-dns';
import { createMachineApi } from '../../src/api/machine-api.ts';
import { diffConfigs } from '../../src/config/config-diff.ts';
import { parseMachineConfig } from '../../src/config/machine-config.ts';
import { createFakeMachineHost } from './support/fake-machine-host.ts';
import { handBuiltSensor } from './support/hand-built-resources.ts';

const sensor = () => handBuiltSensor('thermo', () => ({ celsius: 20 }));

async function freeUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

describe('a local config without auth handlers', () => {
  test('serves every call unauthenticated; Authenticate answers Unimplemented', async () => {
    const host = createFakeMachineHost({
      config: { network: { bind_address: '127.0.0.1:0' } },
      resources: [sensor()],
    });
    const api = createMachineApi();
    await api.start?.(host, AbortSignal.timeout(5000));
    try {
      const transport = createGrpcTransport({ baseUrl: api.address()?.url ?? '' });
      const readings = await createClient(sensorPb.SensorService, transport).getReadings({ name: 'thermo' });
      assert.equal(readings.readings.celsius?.kind.value, 20);
      await assert.rejects(
        createClient(authPb.AuthService, transport).authenticate({
          entity: 'x',
          credentials: { type: 'api-key', payload: 'y' },
        }),
        (error: ConnectError) => error.code === Code.Unimplemented,
      );
    } finally {
      await api.stop?.(AbortSignal.timeout(5000));
    }
  });
});

describe('mDNS', () => {
  test('answers a PTR query for _rpc._tcp.local with the machine instance, its port and address', async () => {
    const mdnsPort = await freeUdpPort();
    const host = createFakeMachineHost({
      config: {
        cloud: {
          id: 'part-1',
          secret: 's',
          fqdn: 'robot-main.abc.example.cloud',
          local_fqdn: 'robot-main.abc.local.example.cloud',
        },
        network: { bind_address: 'localhost:0' },
      },
      resources: [sensor()],
      options: { disableMdns: false },
    });
    const api = createMachineApi({ mdnsPort });
    await api.start?.(host, AbortSignal.timeout(5000));
    const client = makeMdns({
      port: mdnsPort,
      reuseAddr: true,
      loopback: true,
      bind: '0.0.0.0',
      interface: '127.0.0.1',
    });
    try {
      assert.ok(api.mdnsInstances().includes('robot-main-abc-example-cloud._rpc._tcp.local'));
      await new Promise((resolve) => client.once('ready', resolve));
      const answer = new Promise<makeMdns.ResponsePacket>((resolve) => {
        client.on('response', (response) => {
          // The announcement at start-up carries everything as answers; the answer to a query carries the
          // PTRs as answers and SRV/TXT/A as additionals.
          const isPtr = (record: { type: string; name: string }) =>
            record.type === 'PTR' && record.name === '_rpc._tcp.local';
          if (response.answers.some(isPtr) && response.additionals.length > 0) {
            resolve(response);
          }
        });
      });
      client.query({ questions: [{ name: '_rpc._tcp.local', type: 'PTR' }] });
      const response = await answer;
      const data = (record: unknown) => (record as { data: unknown }).data;
      const instances = response.answers.filter((record) => record.type === 'PTR').map(data);
      assert.ok(
        instances.includes('robot-main\\.abc\\.example\\.cloud._rpc._tcp.local'),
        JSON.stringify(instances),
      );
      assert.ok(instances.includes('robot-main-abc-local-example-cloud._rpc._tcp.local'));
      const srv = response.additionals.find((record) => record.type === 'SRV');
      assert.equal((srv?.data as { port: number }).port, api.address()?.port);
      const addresses = response.additionals.filter((record) => record.type === 'A').map(data);
      assert.ok(addresses.includes('127.0.0.1'));
      const txt = response.additionals.find((record) => record.type === 'TXT');
      assert.deepEqual((txt?.data as Buffer[]).map(String), ['grpc']);
    } finally {
      client.destroy();
      await api.stop?.(AbortSignal.timeout(5000));
    }
    assert.deepEqual(api.mdnsInstances(), []);
  });

  test('-disable-mdns advertises nothing', async () => {
    const host = createFakeMachineHost({
      config: { network: { bind_address: 'localhost:0' } },
      resources: [],
      options: { disableMdns: true },
    });
    const api = createMachineApi({ mdnsPort: await freeUdpPort() });
    await api.start?.(host, AbortSignal.timeout(5000));
    assert.deepEqual(api.mdnsInstances(), []);
    await api.stop?.(AbortSignal.timeout(5000));
  });
});

describe('TLS and bind address', () => {
  let certificate: SelfSignedCertificate;
  before(async () => {
    certificate = await createSelfSignedCertificate();
  });
  after(() => certificate.remove());

  // GetReadingsRequest{name: "thermo"}
  const sensorOverH2 = (url: string) =>
    grpcStatusOverHttp2(
      url,
      '/viam.component.sensor.v1.SensorService/GetReadings',
      Buffer.from([0x0a, 6, ...Buffer.from('thermo')]),
    );

  test('network.tls_cert_file/tls_key_file serve TLS; -no-tls serves plain HTTP with the same config', async () => {
    const config = {
      network: {
        bind_address: 'localhost:0',
        tls_cert_file: certificate.certFile,
        tls_key_file: certificate.keyFile,
      },
    };
    const secure = createMachineApi();
    await secure.start?.(createFakeMachineHost({ config, resources: [sensor()] }), AbortSignal.timeout(5000));
    try {
      assert.match(secure.address()?.url ?? '', /^https:\/\/localhost:\d+$/);
      assert.equal(await sensorOverH2(secure.address()?.url ?? ''), '0');
    } finally {
      await secure.stop?.(AbortSignal.timeout(5000));
    }
    const plain = createMachineApi();
    const host = createFakeMachineHost({ config, resources: [sensor()], options: { noTls: true } });
    await plain.start?.(host, AbortSignal.timeout(5000));
    try {
      assert.match(plain.address()?.url ?? '', /^http:\/\/localhost:\d+$/);
      assert.equal(await sensorOverH2(plain.address()?.url ?? ''), '0');
    } finally {
      await plain.stop?.(AbortSignal.timeout(5000));
    }
  });

  test('a changed bind address restarts the listener; other changes keep it', async () => {
    const first = { network: { bind_address: '127.0.0.1:0' } };
    const host = createFakeMachineHost({ config: first, resources: [sensor()] });
    const api = createMachineApi();
    await api.start?.(host, AbortSignal.timeout(5000));
    try {
      const before = api.address();
      const port = await freeTcpPort();
      const next = parseMachineConfig(
        { network: { bind_address: `127.0.0.1:${port}` } },
        { source: 'local' },
      );
      const diff = diffConfigs(host.currentConfig(), next);
      host.setConfig(next);
      await api.configApplied?.(next, diff, AbortSignal.timeout(5000));
      assert.equal(api.address()?.port, port);
      assert.notEqual(before?.port, port);
      assert.equal(await sensorOverH2(api.address()?.url ?? ''), '0');
      await assert.rejects(fetch(`${before?.url}/`));
      const same = parseMachineConfig(
        { network: { bind_address: `127.0.0.1:${port}` }, debug: true },
        { source: 'local' },
      );
      await api.configApplied?.(same, diffConfigs(next, same), AbortSignal.timeout(5000));
      assert.equal(api.address()?.port, port);
    } finally {
      await api.stop?.(AbortSignal.timeout(5000));
    }
  });
});

async function freeTcpPort(): Promise<number> {
  const net = await import('node:net');
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

describe('-webprofile and -shareddir', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'machine-api-shared-'));
    await mkdir(path.join(dir, 'assets'));
    await writeFile(path.join(dir, 'assets', 'index.html'), '<h1>machine</h1>');
    await writeFile(path.join(dir, 'app.js'), 'console.log(1)');
    await writeFile(path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`), 'secret');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`), { force: true });
  });

  function rawGet(url: string, rawPath: string): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      http
        .get(`${url}${rawPath}`, (res) => {
          res.resume();
          resolve(res.statusCode);
        })
        .on('error', reject);
    });
  }

  test('the profiler and the resource graph are served to local callers only with the web profile', async () => {
    const config = {
      network: { bind_address: '127.0.0.1:0' },
      components: [
        { name: 'thermo', api: 'rdk:component:sensor', model: 'fake' },
        { name: 'gen', api: 'rdk:component:generic', model: 'fake', depends_on: ['thermo'] },
      ],
    };
    const off = createMachineApi();
    await off.start?.(createFakeMachineHost({ config, resources: [sensor()] }), AbortSignal.timeout(5000));
    try {
      assert.equal((await fetch(`${off.address()?.url}/debug/graph`)).status, 404);
    } finally {
      await off.stop?.(AbortSignal.timeout(5000));
    }
    const on = createMachineApi();
    const host = createFakeMachineHost({
      config,
      resources: [sensor()],
      options: { webProfile: true, sharedDir: dir },
    });
    await on.start?.(host, AbortSignal.timeout(5000));
    const url = on.address()?.url ?? '';
    try {
      const graph = await (await fetch(`${url}/debug/graph`)).text();
      assert.match(graph, /^digraph resources \{/);
      assert.match(graph, /"rdk:component:sensor\/thermo" \[label="rdk:component:sensor\/thermo\\nready"/);
      assert.match(graph, /"rdk:component:generic\/gen" -> "rdk:component:sensor\/thermo";/);
      const profile = await fetch(`${url}/debug/pprof/profile?seconds=1`);
      assert.equal(profile.status, 200);
      const body = (await profile.json()) as { nodes: unknown[]; startTime: number };
      assert.ok(body.nodes.length > 0);
      assert.equal((await fetch(`${url}/debug/pprof/profile?seconds=0`)).status, 400);
      const heap = await fetch(`${url}/debug/pprof/heap`);
      assert.equal(heap.status, 200);
      assert.match(heap.headers.get('content-disposition') ?? '', /heapsnapshot/);
      await heap.body?.cancel();

      const page = await fetch(`${url}/static/assets/`);
      assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(await page.text(), '<h1>machine</h1>');
      assert.equal(await (await fetch(`${url}/static/app.js`)).text(), 'console.log(1)');
      assert.equal(await rawGet(url, `/static/../${path.basename(dir)}-secret.txt`), 404);
      assert.equal(await rawGet(url, `/static/%2e%2e/${path.basename(dir)}-secret.txt`), 404);
      assert.equal(await rawGet(url, '/static/missing.css'), 404);
    } finally {
      await on.stop?.(AbortSignal.timeout(5000));
    }
  });
});
