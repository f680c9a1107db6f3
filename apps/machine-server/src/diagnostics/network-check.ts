/**
 * `-network-check` (A6): DNS (system resolver for the cloud host and well-known names, plus the
 * public resolvers 1.1.1.1 and 8.8.8.8) and TCP reachability of the cloud address. Results are logged;
 * STUN/ICMP checks of the reference are left out (no WebRTC here, no raw sockets in Node).
 */
import { lookup, Resolver } from 'node:dns/promises';
import { connect } from 'node:net';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';

export interface NetworkCheckResult {
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
  readonly durationMs: number;
}

export async function runNetworkChecks(
  appAddress: string | undefined,
  logger: Logger,
): Promise<NetworkCheckResult[]> {
  const results: NetworkCheckResult[] = [];
  const timed = async (check: string, work: () => Promise<string>) => {
    const started = performance.now();
    try {
      const detail = await work();
      results.push({ check, ok: true, detail, durationMs: Math.round(performance.now() - started) });
    } catch (error) {
      results.push({
        check,
        ok: false,
        detail: errorMessage(error),
        durationMs: Math.round(performance.now() - started),
      });
    }
  };
  const cloud = appAddress ? new URL(appAddress) : undefined;
  const names = [cloud?.hostname, 'google.com'].filter((name): name is string => name !== undefined);
  for (const name of names) {
    await timed(`dns system ${name}`, async () =>
      (await lookup(name, { all: true })).map((a) => a.address).join(', '),
    );
  }
  for (const server of ['1.1.1.1', '8.8.8.8']) {
    const resolver = new Resolver({ timeout: 3000, tries: 1 });
    resolver.setServers([server]);
    await timed(`dns ${server} google.com`, async () => (await resolver.resolve4('google.com')).join(', '));
  }
  if (cloud) {
    const port = Number(cloud.port || (cloud.protocol === 'https:' ? 443 : 80));
    await timed(`tcp ${cloud.hostname}:${port}`, () => tcpConnect(cloud.hostname, port, 5000));
  }
  for (const result of results) {
    logger[result.ok ? 'info' : 'warn']('network check', { ...result });
  }
  return results;
}

function tcpConnect(host: string, port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('timeout', () => {
      socket.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    });
    socket.once('error', reject);
  });
}
