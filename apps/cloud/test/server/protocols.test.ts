import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Code, type ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { authPb, dataPb } from '@mcloud/protocol';
import { authenticate, clientsWithToken, createTestTransport } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let env: TestCloud;
before(async () => {
  env = await startTestCloud();
});
after(() => env.stop());

const apiKey = () => ({ keyId: env.bootstrap.api_key_id, key: env.bootstrap.api_key });

describe('one port serves every protocol', () => {
  for (const kind of ['grpc', 'grpc-web'] as const) {
    test(`${kind}: authenticate, then an authenticated call reaches a handler`, async () => {
      const token = await authenticate(env.url, apiKey(), kind);
      assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
      const clients = clientsWithToken(env.url, token, kind);
      const tags = await clients.data.tagsByFilter({});
      assert.deepEqual(tags.tags, []);
      // A registered RPC we do not implement (the module registry) answers Unimplemented, not 404.
      await assert.rejects(
        clients.app.createModule({ organizationId: env.bootstrap.organization_id, name: 'm' }),
        (error: ConnectError) => error.code === Code.Unimplemented,
      );
    });
  }

  test('Connect protocol (JSON over HTTP/1.1) works too', async () => {
    const auth = createClient(
      authPb.AuthService,
      createConnectTransport({ baseUrl: env.url, httpVersion: '1.1' }),
    );
    const response = await auth.authenticate({
      entity: env.bootstrap.api_key_id,
      credentials: { type: 'api-key', payload: env.bootstrap.api_key },
    });
    assert.ok(response.accessToken.length > 20);
  });

  test('an unknown service path answers 404, health answers ok', async () => {
    assert.equal((await fetch(`${env.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${env.url}/no.such.Service/Method`, { method: 'POST' })).status, 404);
  });
});

describe('CORS for browsers', () => {
  test('preflight allows the headers the SDK sends', async () => {
    const response = await fetch(`${env.url}/viam.app.v1.AppService/ListOrganizations`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://console.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,viam_client,x-grpc-web,x-user-agent',
      },
    });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('access-control-allow-origin'), 'https://console.example');
    const allowed = response.headers.get('access-control-allow-headers') ?? '';
    for (const header of ['authorization', 'viam_client', 'x-grpc-web'])
      assert.ok(allowed.includes(header), header);
  });

  test('responses expose the gRPC status headers', async () => {
    const response = await fetch(`${env.url}/viam.app.data.v1.DataService/TagsByFilter`, {
      method: 'POST',
      headers: {
        origin: 'https://console.example',
        'content-type': 'application/grpc-web+proto',
        'x-grpc-web': '1',
      },
      body: new Uint8Array([0, 0, 0, 0, 0]),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('access-control-expose-headers') ?? '', /grpc-status/);
    // gRPC-web carries the status in headers (trailers-only) or in the trailer frame of the body.
    const status =
      response.headers.get('grpc-status') ?? /grpc-status:\s*(\d+)/.exec(await response.text())?.[1];
    assert.equal(status, String(Code.Unauthenticated));
  });
});

describe('authentication', () => {
  const transport = () => createTestTransport(env.url, 'grpc');

  test('wrong secret and unknown key are Unauthenticated', async () => {
    const auth = createClient(authPb.AuthService, transport());
    for (const [entity, payload] of [
      [env.bootstrap.api_key_id, 'wrong'],
      ['00000000-0000-4000-8000-000000000000', env.bootstrap.api_key],
      ['not-a-uuid', 'x'],
    ]) {
      await assert.rejects(
        auth.authenticate({ entity, credentials: { type: 'api-key', payload } }),
        (error: ConnectError) => error.code === Code.Unauthenticated,
      );
    }
  });

  test('unknown credential type and missing credentials name the field', async () => {
    const auth = createClient(authPb.AuthService, transport());
    await assert.rejects(
      auth.authenticate({
        entity: env.bootstrap.api_key_id,
        credentials: { type: 'password', payload: 'x' },
      }),
      (error: ConnectError) =>
        error.code === Code.InvalidArgument && error.message.includes('credentials.type'),
    );
    await assert.rejects(
      auth.authenticate({ entity: env.bootstrap.api_key_id }),
      (error: ConnectError) => error.code === Code.InvalidArgument && error.message.includes('credentials'),
    );
  });

  test('Authenticate refuses a caller that already sends a token', async () => {
    const token = await authenticate(env.url, apiKey());
    const auth = createClient(authPb.AuthService, transport());
    await assert.rejects(
      auth.authenticate(
        {
          entity: env.bootstrap.api_key_id,
          credentials: { type: 'api-key', payload: env.bootstrap.api_key },
        },
        { headers: { authorization: `Bearer ${token}` } },
      ),
      (error: ConnectError) => error.code === Code.InvalidArgument,
    );
  });

  test('missing, malformed and forged tokens are Unauthenticated', async () => {
    const token = await authenticate(env.url, apiKey());
    const [header, body] = token.split('.');
    const forged = `${header}.${body}.${'A'.repeat(43)}`;
    for (const authorization of [undefined, 'Basic abc', 'Bearer not.a.jwt', `Bearer ${forged}`]) {
      const data = createClient(dataPb.DataService, transport());
      await assert.rejects(
        data.tagsByFilter({}, authorization ? { headers: { authorization } } : {}),
        (error: ConnectError) => error.code === Code.Unauthenticated,
        String(authorization),
      );
    }
  });
});

describe('message size', () => {
  test('a 20 MiB request is accepted', async () => {
    const token = await authenticate(env.url, apiKey());
    const clients = clientsWithToken(env.url, token, 'grpc');
    // The handler sees it and applies its own field limit (not the transport's ResourceExhausted).
    await assert.rejects(
      clients.data.tagsByFilter({ filter: { componentName: 'x'.repeat(20 * 1024 * 1024) } }),
      (error: ConnectError) =>
        error.code === Code.InvalidArgument && /component_name.*512/.test(error.message),
    );
  });

  test('a request over 32 MiB is refused without harming the server', async () => {
    const token = await authenticate(env.url, apiKey());
    const clients = clientsWithToken(env.url, token, 'grpc-web');
    await assert.rejects(
      clients.data.tagsByFilter({ filter: { componentName: 'x'.repeat(33 * 1024 * 1024) } }),
      (error: ConnectError) => error.code === Code.ResourceExhausted,
    );
    assert.equal((await fetch(`${env.url}/healthz`)).status, 200);
  });
});
