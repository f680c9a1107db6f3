/**
 * The network checks against local servers (the public ones are unreachable in CI): STUN binding
 * requests over UDP and TCP answered by a small STUN responder, the TCP check of the cloud address, and
 * a server that never answers, which becomes a failed result within the check's time bound.
 */
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { runNetworkChecks, stunMappedAddress } from '../../src/diagnostics/network-check.ts';
import { createRecordingLogger } from '../data/data-fixtures.ts';

/** A STUN Binding Success Response for `request`, reporting `port` at 127.0.0.1 (XOR-MAPPED-ADDRESS). */
function stunResponse(request: Buffer, port: number): Buffer {
  const response = Buffer.alloc(32);
  response.writeUInt16BE(0x0101, 0);
  response.writeUInt16BE(12, 2);
  request.copy(response, 4, 4, 20);
  response.writeUInt16BE(0x0020, 20);
  response.writeUInt16BE(8, 22);
  response[25] = 0x01;
  response.writeUInt16BE(port ^ 0x2112, 26);
  response.writeUInt32BE((0x7f000001 ^ 0x2112a442) >>> 0, 28);
  return response;
}

let udp: Socket;
let silentUdp: Socket;
let tcp: Server;
const udpPort = () => (udp.address() as { port: number }).port;
const tcpPort = () => (tcp.address() as { port: number }).port;

before(async () => {
  udp = createSocket('udp4');
  udp.on('message', (message, remote) =>
    udp.send(stunResponse(message, remote.port), remote.port, remote.address),
  );
  silentUdp = createSocket('udp4');
  tcp = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', (request) => socket.end(stunResponse(request, socket.remotePort ?? 0)));
  });
  await Promise.all([
    new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve)),
    new Promise<void>((resolve) => silentUdp.bind(0, '127.0.0.1', resolve)),
    new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve)),
  ]);
});
after(() => {
  udp.close();
  silentUdp.close();
  tcp.close();
});

test('STUN over UDP and TCP, the cloud address, and a silent server as a failed result', async () => {
  const logger = createRecordingLogger('rdk.network-checks');
  const silent = `127.0.0.1:${(silentUdp.address() as { port: number }).port}`;
  const started = performance.now();
  const results = await runNetworkChecks({
    appAddress: `http://127.0.0.1:${tcpPort()}`,
    logger,
    targets: {
      dnsNames: [],
      dnsServers: [],
      udpStunServers: [`127.0.0.1:${udpPort()}`, silent],
      tcpStunServers: [`127.0.0.1:${tcpPort()}`],
    },
    timeoutMs: 400,
  });
  assert.ok(performance.now() - started < 2000, 'checks run concurrently within their bound');
  const byCheck = new Map(results.map((result) => [result.check, result]));
  assert.match(byCheck.get(`udp stun 127.0.0.1:${udpPort()}`)?.detail ?? '', /^mapped 127\.0\.0\.1:\d+$/);
  assert.equal(byCheck.get(`udp stun 127.0.0.1:${udpPort()}`)?.ok, true);
  assert.match(byCheck.get(`tcp stun 127.0.0.1:${tcpPort()}`)?.detail ?? '', /^mapped 127\.0\.0\.1:\d+$/);
  assert.equal(byCheck.get(`tcp 127.0.0.1:${tcpPort()}`)?.detail, 'connected');
  assert.deepEqual(byCheck.get(`udp stun ${silent}`)?.ok, false);
  assert.match(byCheck.get(`udp stun ${silent}`)?.detail ?? '', /no answer within 400 ms/);
  assert.equal(results.length, 4);
  assert.deepEqual(
    logger.entries.map((entry) => [entry.level, entry.message, entry.fields?.check]).sort(),
    results.map((result) => [result.ok ? 'info' : 'warn', 'network check', result.check]).sort(),
    'each result is logged once, failures at WARN',
  );
});

test('a STUN answer to another transaction or without an address is rejected', () => {
  const request = Buffer.alloc(20);
  request.writeUInt16BE(1, 0);
  request.writeUInt32BE(0x2112a442, 4);
  request.fill(9, 8);
  assert.equal(stunMappedAddress(stunResponse(request, 4242), request), 'mapped 127.0.0.1:4242');
  const other = Buffer.from(request);
  other[19] = 1;
  assert.throws(() => stunMappedAddress(stunResponse(other, 1), request), /transaction id mismatch/);
  const bare = stunResponse(request, 1).subarray(0, 20);
  bare.writeUInt16BE(0, 2);
  assert.throws(() => stunMappedAddress(bare, request), /without a mapped IPv4 address/);
  assert.throws(() => stunMappedAddress(Buffer.alloc(4), request), /not a STUN binding success response/);
});
