import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let env: TestCloud;
let certDir: string;
before(async () => {
  certDir = await mkdtemp(path.join(tmpdir(), 'mcloud-cert-'));
  const certFile = path.join(certDir, 'cert.pem');
  const keyFile = path.join(certDir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  env = await startTestCloud({
    configure: (config) => ({
      ...config,
      tls: { certFile, keyFile },
      publicUrl: config.publicUrl.replace('http:', 'https:'),
    }),
  });
});
after(async () => {
  await env.stop();
  await rm(certDir, { recursive: true, force: true });
});

function negotiate(alpn: string[]): Promise<string | false | null> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: '127.0.0.1', port: env.cloud.port, ALPNProtocols: alpn, rejectUnauthorized: false },
      () => {
        resolve(socket.alpnProtocol);
        socket.end();
      },
    );
    socket.on('error', reject);
  });
}

test('TLS offers h2 and http/1.1 through ALPN', async () => {
  assert.equal(await negotiate(['h2', 'http/1.1']), 'h2');
  assert.equal(await negotiate(['http/1.1']), 'http/1.1');
});

test('gRPC over TLS h2 reaches the API', async () => {
  assert.match(env.url, /^https:/);
  const session = http2.connect(`https://127.0.0.1:${env.cloud.port}`, { rejectUnauthorized: false });
  const status = await new Promise<string | undefined>((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': '/viam.app.data.v1.DataService/TagsByFilter',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let grpcStatus: string | undefined;
    stream.on('response', (headers) => {
      grpcStatus = headers['grpc-status'] as string | undefined;
    });
    stream.on('trailers', (trailers) => {
      grpcStatus = (trailers['grpc-status'] as string | undefined) ?? grpcStatus;
    });
    stream.on('close', () => resolve(grpcStatus));
    stream.on('error', reject);
    stream.end(Buffer.from([0, 0, 0, 0, 0]));
  });
  session.close();
  assert.equal(status, '16'); // Unauthenticated: the call went through TLS, h2 and the auth interceptor
});
