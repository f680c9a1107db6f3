import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import {
  createSelfSignedCertificate,
  grpcStatusOverHttp2,
  type SelfSignedCertificate,
} from '@mcloud/rpc-server/testing';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let env: TestCloud;
let certificate: SelfSignedCertificate;
before(async () => {
  certificate = await createSelfSignedCertificate();
  const { certFile, keyFile } = certificate;
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
  await certificate.remove();
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
  const status = await grpcStatusOverHttp2(env.url, '/viam.app.data.v1.DataService/TagsByFilter');
  assert.equal(status, '16'); // Unauthenticated: the call went through TLS, h2 and the auth interceptor
});
