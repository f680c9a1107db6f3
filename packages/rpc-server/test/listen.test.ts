import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { applyCors, type Listener, listen, type RequestHandler } from '../src/index.ts';
import { createSelfSignedCertificate, type SelfSignedCertificate } from './support/index.ts';

/** Answers with the HTTP version the request arrived on, so a test sees which server got the socket. */
const echoVersion: RequestHandler = (req, res) => {
  if (applyCors(req, res)) return;
  res.setHeader('content-type', 'text/plain');
  res.end(`HTTP/${req.httpVersion} ${req.method} ${req.url}`);
};

function http2Get(url: string, options: http2.SecureClientSessionOptions = {}): Promise<string> {
  const session = http2.connect(url, options);
  return new Promise<string>((resolve, reject) => {
    session.on('error', reject);
    const stream = session.request({ ':method': 'GET', ':path': '/h2' });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('end', () => resolve(body));
    stream.on('error', reject);
    stream.end();
  }).finally(() => session.close());
}

describe('cleartext: one port, sniffed', () => {
  let listener: Listener;
  before(async () => {
    listener = await listen({ host: '127.0.0.1', port: 0, tls: undefined, handler: echoVersion });
  });
  after(() => listener.close(1000));

  test('an HTTP/2 client with prior knowledge reaches the h2c server', async () => {
    assert.equal(await http2Get(`http://127.0.0.1:${listener.port}`), 'HTTP/2.0 GET /h2');
  });

  test('an HTTP/1.1 client on the same port reaches the HTTP/1.1 server', async () => {
    const response = await fetch(`http://127.0.0.1:${listener.port}/h1`, { method: 'POST', body: 'x' });
    assert.equal(await response.text(), 'HTTP/1.1 POST /h1');
  });

  test('a CORS preflight is answered with the requested headers', async () => {
    const response = await fetch(`http://127.0.0.1:${listener.port}/svc/Method`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://console.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,x-grpc-web',
      },
    });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('access-control-allow-origin'), 'https://console.example');
    assert.equal(response.headers.get('access-control-allow-headers'), 'authorization,x-grpc-web');
    assert.match(response.headers.get('access-control-expose-headers') ?? '', /grpc-status/);
  });

  test('a request without an origin gets no CORS headers', async () => {
    const response = await fetch(`http://127.0.0.1:${listener.port}/plain`);
    assert.equal(response.headers.get('access-control-allow-origin'), null);
    assert.equal(await response.text(), 'HTTP/1.1 GET /plain');
  });
});

describe('close', () => {
  test('destroys connections still open at the deadline', async () => {
    let hold: (() => void) | undefined;
    const listener = await listen({
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      handler: (_req, res) => {
        hold = () => res.end();
      },
    });
    const request = new Promise<string>((resolve) => {
      http
        .get(`http://127.0.0.1:${listener.port}/slow`, () => resolve('answered'))
        .on('error', () => resolve('destroyed'));
    });
    while (!hold) await new Promise((resolve) => setTimeout(resolve, 5));
    const started = Date.now();
    await listener.close(100);
    assert.ok(Date.now() - started >= 90, 'close waited for the deadline');
    assert.equal(await request, 'destroyed');
  });
});

describe('close with idle clients', () => {
  test('returns promptly when an HTTP/1.1 client keeps its idle connection alive', async () => {
    const listener = await listen({ host: '127.0.0.1', port: 0, tls: undefined, handler: echoVersion });
    const agent = new http.Agent({ keepAlive: true });
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${listener.port}/idle`, { agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    assert.equal(body, 'HTTP/1.1 GET /idle');
    const started = Date.now();
    await listener.close(5000);
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    agent.destroy();
  });

  test('returns promptly when an HTTP/2 client keeps its idle session open', async () => {
    const listener = await listen({ host: '127.0.0.1', port: 0, tls: undefined, handler: echoVersion });
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    session.on('error', () => {});
    const body = await new Promise<string>((resolve, reject) => {
      const stream = session.request({ ':method': 'GET', ':path': '/idle' });
      let text = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        text += chunk;
      });
      stream.on('end', () => resolve(text));
      stream.on('error', reject);
      stream.end();
    });
    assert.equal(body, 'HTTP/2.0 GET /idle');
    const started = Date.now();
    await listener.close(5000);
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    session.destroy();
  });
});

describe('close during a call', () => {
  test('an HTTP/1.1 keep-alive connection busy at close is closed once its response is sent', async () => {
    let arrived = () => {};
    const inFlight = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const listener = await listen({
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      handler: (_req, res) => {
        arrived();
        setTimeout(() => res.end('done'), 50);
      },
    });
    const response = fetch(`http://127.0.0.1:${listener.port}/busy`, { method: 'POST', body: 'x' }).then(
      (r) => r.text(),
    );
    await inFlight;
    const started = Date.now();
    await listener.close(5000);
    assert.ok(Date.now() - started < 1000, `close took ${Date.now() - started} ms`);
    assert.equal(await response, 'done');
  });
});

describe('TLS', () => {
  let certificate: SelfSignedCertificate;
  let listener: Listener;
  before(async () => {
    certificate = await createSelfSignedCertificate();
    const { certFile, keyFile } = certificate;
    listener = await listen({ host: '127.0.0.1', port: 0, tls: { certFile, keyFile }, handler: echoVersion });
  });
  after(async () => {
    await listener.close(1000);
    await certificate.remove();
  });

  function negotiate(alpn: string[]): Promise<string | false | null> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect(
        { host: '127.0.0.1', port: listener.port, ALPNProtocols: alpn, rejectUnauthorized: false },
        () => {
          resolve(socket.alpnProtocol);
          socket.end();
        },
      );
      socket.on('error', reject);
    });
  }

  test('ALPN offers h2 and http/1.1', async () => {
    assert.equal(await negotiate(['h2', 'http/1.1']), 'h2');
    assert.equal(await negotiate(['http/1.1']), 'http/1.1');
  });

  test('h2 over TLS reaches the handler', async () => {
    const body = await http2Get(`https://127.0.0.1:${listener.port}`, { rejectUnauthorized: false });
    assert.equal(body, 'HTTP/2.0 GET /h2');
  });
});
