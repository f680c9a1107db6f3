/**
 * The network checks (machine-runtime.md A6): `-network-check` runs them once, logs every result and
 * exits; without the flag they run once in the background at start-up. Checks: DNS through the system
 * resolver (the cloud host, google.com) and through the public resolvers 1.1.1.1 and 8.8.8.8, UDP STUN
 * binding requests to the reference's STUN servers, TCP STUN to turn.viam.com:443, and a TCP connection
 * to the cloud address. A failed check is a result, never an error. The ICMP
 * packet-loss probes of the reference are left out: Node has no raw sockets.
 */
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { lookup, Resolver } from 'node:dns/promises';
import { connect, isIP } from 'node:net';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';

export interface NetworkCheckResult {
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
  readonly durationMs: number;
}

export interface NetworkCheckTargets {
  /** Names resolved through the system resolver and the public resolvers (the cloud host is added). */
  readonly dnsNames: readonly string[];
  readonly dnsServers: readonly string[];
  /** `host:port` of STUN servers asked over UDP. */
  readonly udpStunServers: readonly string[];
  /** `host:port` of STUN servers asked over TCP. */
  readonly tcpStunServers: readonly string[];
}

export const defaultNetworkCheckTargets: NetworkCheckTargets = {
  dnsNames: ['app.viam.com', 'google.com'],
  dnsServers: ['1.1.1.1', '8.8.8.8'],
  udpStunServers: [
    'global.stun.twilio.com:3478',
    'turn.viam.com:443',
    'stun.l.google.com:3478',
    'stun.l.google.com:19302',
    'stun.sipgate.net:3478',
    'stun.sipgate.net:3479',
  ],
  tcpStunServers: ['turn.viam.com:443'],
};

export interface NetworkCheckOptions {
  /** `cloud.app_address`: its host is resolved and connected to. */
  readonly appAddress?: string;
  readonly logger: Logger;
  readonly targets?: NetworkCheckTargets;
  /** Bound of each check (default 5 s). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * `each` (-network-check): every result at INFO, failures at WARN. `summary` (the background run at
   * start-up): every result at DEBUG, then one INFO line counting the passed checks and naming the failed.
   */
  readonly report?: 'each' | 'summary';
}

/** Runs every check concurrently (each bounded by `timeoutMs`) and logs the results (see `report`). */
export async function runNetworkChecks(options: NetworkCheckOptions): Promise<NetworkCheckResult[]> {
  const targets = options.targets ?? defaultNetworkCheckTargets;
  const timeoutMs = options.timeoutMs ?? 5000;
  const cloud = parseAppAddress(options.appAddress);
  const checks: [string, (signal: AbortSignal) => Promise<string>][] = [];
  const names = [...new Set([...(cloud && !isIP(cloud.host) ? [cloud.host] : []), ...targets.dnsNames])];
  // getaddrinfo blocks a libuv pool thread (shared with file I/O) while DNS is unreachable: one at a
  // time. Every other name goes through c-ares (Resolver), which does not use the pool.
  let systemLookups: Promise<unknown> = Promise.resolve();
  const systemLookup = (name: string) => {
    const result = systemLookups.then(() => lookup(name, { all: true }));
    systemLookups = result.catch(() => {});
    return result;
  };
  for (const name of names) {
    checks.push([`dns system ${name}`, async () => addresses(await systemLookup(name))]);
    for (const server of targets.dnsServers) {
      checks.push([`dns ${server} ${name}`, (signal) => resolveWith(server, name, timeoutMs, signal)]);
    }
  }
  for (const server of targets.udpStunServers) {
    checks.push([`udp stun ${server}`, (signal) => udpStun(server, timeoutMs, signal)]);
  }
  for (const server of targets.tcpStunServers) {
    checks.push([`tcp stun ${server}`, (signal) => tcpStun(server, timeoutMs, signal)]);
  }
  if (cloud) {
    checks.push([`tcp ${cloud.host}:${cloud.port}`, (signal) => tcpConnect(cloud.host, cloud.port, signal)]);
  }
  const results = await Promise.all(
    checks.map(([check, work]) => timedCheck(check, work, timeoutMs, options.signal)),
  );
  if (options.signal?.aborted) return results;
  const summary = options.report === 'summary';
  for (const result of results) {
    options.logger[summary ? 'debug' : result.ok ? 'info' : 'warn']('network check', { ...result });
  }
  if (summary) {
    options.logger.info('network checks done', {
      passed: results.filter((result) => result.ok).length,
      total: results.length,
      failed: results.filter((result) => !result.ok).map((result) => result.check),
    });
  }
  return results;
}

async function timedCheck(
  check: string,
  work: (signal: AbortSignal) => Promise<string>,
  timeoutMs: number,
  parent: AbortSignal | undefined,
): Promise<NetworkCheckResult> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = parent ? AbortSignal.any([parent, timeout]) : timeout;
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const detail = await Promise.race([work(signal), rejectOnAbort(signal)]);
    return { check, ok: true, detail, durationMs: elapsed() };
  } catch (error) {
    const detail = timeout.aborted ? `no answer within ${timeoutMs} ms` : errorMessage(error);
    return { check, ok: false, detail, durationMs: elapsed() };
  }
}

/** Settles a check whose work cannot be cancelled (the system resolver) once its signal aborts. */
function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new Error('aborted'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

function parseAppAddress(appAddress: string | undefined): { host: string; port: number } | undefined {
  if (!appAddress) return undefined;
  try {
    const url = new URL(appAddress);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return { host, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
  } catch {
    return undefined;
  }
}

function addresses(found: readonly { address: string }[]): string {
  return found.map((entry) => entry.address).join(', ');
}

async function resolveWith(server: string, name: string, timeoutMs: number, signal: AbortSignal) {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  resolver.setServers([server]);
  signal.addEventListener('abort', () => resolver.cancel(), { once: true });
  return (await resolver.resolve4(name)).join(', ');
}

/** `host:port` with the host resolved through c-ares (the system's DNS servers) unless it is an IP. */
async function resolveHostPort(hostPort: string, timeoutMs: number, signal: AbortSignal) {
  const { host, port } = splitHostPort(hostPort);
  if (isIP(host)) return { host, port };
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  signal.addEventListener('abort', () => resolver.cancel(), { once: true });
  const [address] = await resolver.resolve4(host);
  if (!address) throw new Error(`no IPv4 address for ${host}`);
  return { host: address, port };
}

function splitHostPort(hostPort: string): { host: string; port: number } {
  const colon = hostPort.lastIndexOf(':');
  return {
    host: hostPort.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
    port: Number(hostPort.slice(colon + 1)),
  };
}

const stunMagicCookie = 0x2112a442;

/** A STUN Binding Request (RFC 5389): type 0x0001, no attributes, the magic cookie, a transaction id. */
export function stunBindingRequest(): Buffer {
  const message = Buffer.alloc(20);
  message.writeUInt16BE(0x0001, 0);
  message.writeUInt32BE(stunMagicCookie, 4);
  randomBytes(12).copy(message, 8);
  return message;
}

/** The address a Binding Success Response reports (XOR-MAPPED-ADDRESS, else MAPPED-ADDRESS), IPv4 only. */
export function stunMappedAddress(response: Buffer, request: Buffer): string {
  if (response.length < 20 || response.readUInt16BE(0) !== 0x0101) {
    throw new Error('not a STUN binding success response');
  }
  if (!response.subarray(8, 20).equals(request.subarray(8, 20)))
    throw new Error('STUN transaction id mismatch');
  const end = Math.min(response.length, 20 + response.readUInt16BE(2));
  let at = 20;
  while (at + 4 <= end) {
    const type = response.readUInt16BE(at);
    const length = response.readUInt16BE(at + 2);
    const value = response.subarray(at + 4, at + 4 + length);
    if ((type === 0x0020 || type === 0x0001) && value.length >= 8 && value[1] === 0x01) {
      const xor = type === 0x0020;
      const port = value.readUInt16BE(2) ^ (xor ? stunMagicCookie >>> 16 : 0);
      const address = value.readUInt32BE(4) ^ (xor ? stunMagicCookie : 0);
      return `mapped ${[24, 16, 8, 0].map((shift) => (address >>> shift) & 0xff).join('.')}:${port}`;
    }
    at += 4 + Math.ceil(length / 4) * 4;
  }
  throw new Error('STUN response without a mapped IPv4 address');
}

async function udpStun(server: string, timeoutMs: number, signal: AbortSignal): Promise<string> {
  const { host, port } = await resolveHostPort(server, timeoutMs, signal);
  const request = stunBindingRequest();
  return new Promise((resolve, reject) => {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    const finish = (error: Error | undefined, value?: string) => {
      signal.removeEventListener('abort', onAbort);
      socket.close();
      if (error) reject(error);
      else resolve(value as string);
    };
    const onAbort = () => finish(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('error', (error) => finish(error));
    socket.on('message', (message) => {
      try {
        finish(undefined, stunMappedAddress(message, request));
      } catch (error) {
        finish(error as Error);
      }
    });
    socket.send(request, port, host, (error) => {
      if (error) finish(error);
    });
  });
}

async function tcpStun(server: string, timeoutMs: number, signal: AbortSignal): Promise<string> {
  const { host, port } = await resolveHostPort(server, timeoutMs, signal);
  const request = stunBindingRequest();
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, signal });
    let received = Buffer.alloc(0);
    socket.once('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 20 || received.length < 20 + received.readUInt16BE(2)) return;
      socket.destroy();
      try {
        resolve(stunMappedAddress(received, request));
      } catch (error) {
        reject(error);
      }
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('connection closed before a STUN response')));
  });
}

function tcpConnect(host: string, port: number, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, signal });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', reject);
  });
}
