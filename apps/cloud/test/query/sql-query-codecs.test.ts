import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from '@connectrpc/connect-node';
import { dataPb } from '@mcloud/protocol';
import { deserialize } from 'bson';
import { authenticate } from '../support/connect-clients.ts';
import { createPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// TabularDataBySQL over every protocol and codec a client may pick (gRPC, gRPC-web, Connect; binary and
// JSON; with and without gzip): each decodes the same documents, in order.

let t: TestCloud;
let token: string;
const base = Date.parse('2025-03-10T00:00:00Z');
const readings = Array.from({ length: 300 }, (_, i) => ({
  capturedAtMs: base + i * 1000,
  data: { readings: { temperature: 20 + i / 10, label: 'x'.repeat(i % 200) } },
}));

before(async () => {
  t = await startTestCloud();
  const part = await createPart(
    t.cloud,
    { organizationId: t.bootstrap.organization_id, locationId: t.bootstrap.location_id },
    { robotName: 'codecs' },
  );
  await seedReadings(t.cloud, part, { componentName: 'thermo' }, readings);
  token = await authenticate(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key });
});

after(async () => {
  await t?.stop();
});

const bearer: Interceptor = (next) => (req) => {
  req.header.set('authorization', `Bearer ${token}`);
  return next(req);
};

const transports: Record<string, () => Transport> = {
  'gRPC (binary, gzip offered)': () => createGrpcTransport({ baseUrl: t.url, interceptors: [bearer] }),
  'gRPC (binary, no compression)': () =>
    createGrpcTransport({ baseUrl: t.url, interceptors: [bearer], acceptCompression: [] }),
  'gRPC-web (binary)': () =>
    createGrpcWebTransport({ baseUrl: t.url, httpVersion: '1.1', interceptors: [bearer] }),
  'gRPC-web (JSON)': () =>
    createGrpcWebTransport({
      baseUrl: t.url,
      httpVersion: '1.1',
      interceptors: [bearer],
      useBinaryFormat: false,
    }),
  'Connect (JSON)': () =>
    createConnectTransport({
      baseUrl: t.url,
      httpVersion: '1.1',
      interceptors: [bearer],
      useBinaryFormat: false,
    }),
  'Connect (binary)': () =>
    createConnectTransport({
      baseUrl: t.url,
      httpVersion: '1.1',
      interceptors: [bearer],
      useBinaryFormat: true,
    }),
};

for (const [name, transport] of Object.entries(transports)) {
  test(`${name}: every document, in order`, async () => {
    const data = createClient(dataPb.DataService, transport());
    const response = await data.tabularDataBySQL({
      organizationId: t.bootstrap.organization_id,
      sqlQuery: 'SELECT time_received, data FROM readings ORDER BY time_received',
    });
    assert.equal(response.rawData.length, readings.length);
    response.rawData.forEach((bytes, i) => {
      const doc = deserialize(bytes);
      assert.deepEqual(doc.time_received, new Date(base + i * 1000));
      assert.equal(doc.data.readings.label, 'x'.repeat(i % 200));
    });
    const empty = await data.tabularDataBySQL({
      organizationId: t.bootstrap.organization_id,
      sqlQuery: "SELECT * FROM readings WHERE component_name = 'none'",
    });
    assert.deepEqual(empty.rawData, []);
  });
}
