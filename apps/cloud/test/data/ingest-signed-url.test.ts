import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http2 from 'node:http2';
import { after, before, test } from 'node:test';
import { dataSyncPb } from '@mcloud/protocol';
import { createSignedDownloadUrl } from '../../src/domain/data/signed-urls.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { apiKeyClient, createTestPart, ts, uploadMetadata } from './ingest-fixtures.ts';

let t: TestCloud;
let binaryDataId: string;
const content = randomBytes(100_000);

before(async () => {
  t = await startTestCloud();
  const client = await apiKeyClient(t);
  const part = await createTestPart(t, t.bootstrap.organization_id, t.bootstrap.location_id);
  const response = await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, { type: dataSyncPb.DataType.BINARY_SENSOR, fileExtension: '.png' }),
    sensorContents: [
      { metadata: { timeRequested: ts(Date.now()) }, data: { case: 'binary', value: content } },
    ],
  });
  binaryDataId = response.binaryDataId;
});
after(async () => {
  await t?.stop();
});

const signed = (expiresAtMs = Date.now() + 60_000) =>
  createSignedDownloadUrl(t.cloud.deps, binaryDataId, expiresAtMs);

test('a signed URL downloads the item without a token, with type and length', async () => {
  const url = await signed();
  assert.ok(url.startsWith(`${t.url}/download/${binaryDataId}?expires=`), url);
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'image/png');
  assert.equal(response.headers.get('content-length'), String(content.length));
  assert.equal(response.headers.get('accept-ranges'), 'bytes');
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), content);
  const head = await fetch(url, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(content.length));
});

test('Range requests return 206 with the slice, 416 when unsatisfiable', async () => {
  const url = await signed();
  const middle = await fetch(url, { headers: { range: 'bytes=10-19' } });
  assert.equal(middle.status, 206);
  assert.equal(middle.headers.get('content-range'), `bytes 10-19/${content.length}`);
  assert.equal(middle.headers.get('content-length'), '10');
  assert.deepEqual(Buffer.from(await middle.arrayBuffer()), content.subarray(10, 20));
  const suffix = await fetch(url, { headers: { range: 'bytes=-5' } });
  assert.equal(suffix.status, 206);
  assert.deepEqual(Buffer.from(await suffix.arrayBuffer()), content.subarray(content.length - 5));
  const open = await fetch(url, { headers: { range: `bytes=${content.length - 3}-` } });
  assert.deepEqual(Buffer.from(await open.arrayBuffer()), content.subarray(content.length - 3));
  const beyond = await fetch(url, { headers: { range: `bytes=${content.length}-` } });
  assert.equal(beyond.status, 416);
  assert.equal(beyond.headers.get('content-range'), `bytes */${content.length}`);
  await beyond.arrayBuffer();
});

test('expired and tampered URLs answer 403 with a clear text', async () => {
  const expired = await fetch(await signed(Date.now() - 1000));
  assert.equal(expired.status, 403);
  assert.match(await expired.text(), /expired/);
  const url = new URL(await signed());
  const expires = url.searchParams.get('expires') ?? '';
  url.searchParams.set('expires', String(Number(expires) + 3_600_000));
  const longer = await fetch(url);
  assert.equal(longer.status, 403);
  assert.match(await longer.text(), /invalid signed URL/);
  const otherId = new URL(await signed());
  otherId.pathname = otherId.pathname.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
  const swapped = await fetch(otherId);
  assert.equal(swapped.status, 403);
  await swapped.text();
  // The 43rd base64url character carries 2 unused bits: flipping one decodes to the same MAC bytes.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const twin = new URL(await signed());
  const sig = twin.searchParams.get('sig') ?? '';
  const last = alphabet[alphabet.indexOf(sig.at(-1) ?? 'A') ^ 1] as string;
  twin.searchParams.set('sig', sig.slice(0, -1) + last);
  assert.ok(
    Buffer.from(twin.searchParams.get('sig') ?? '', 'base64url').equals(Buffer.from(sig, 'base64url')),
  );
  const sameBytes = await fetch(twin);
  assert.equal(sameBytes.status, 403, 'a signature spelled differently is refused');
  await sameBytes.text();
  const unsigned = await fetch(`${t.url}/download/${binaryDataId}`);
  assert.equal(unsigned.status, 403);
  await unsigned.text();
});

test('a valid signature for a deleted item answers 404', async () => {
  const url = await createSignedDownloadUrl(
    t.cloud.deps,
    `${binaryDataId.slice(0, -1)}x`,
    Date.now() + 60_000,
  );
  const response = await fetch(url);
  assert.equal(response.status, 404);
  await response.text();
});

test('downloads also work over HTTP/2 (h2c)', async () => {
  const url = new URL(await signed());
  const session = http2.connect(url.origin);
  try {
    const body = await new Promise<{ status: number; bytes: Buffer }>((resolve, reject) => {
      const stream = session.request({ ':path': `${url.pathname}${url.search}`, range: 'bytes=0-99' });
      const chunks: Buffer[] = [];
      let status = 0;
      stream.on('response', (headers) => {
        status = Number(headers[':status']);
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve({ status, bytes: Buffer.concat(chunks) }));
      stream.on('error', reject);
      stream.end();
    });
    assert.equal(body.status, 206);
    assert.deepEqual(body.bytes, content.subarray(0, 100));
  } finally {
    session.close();
  }
});
