import { networkInterfaces } from 'node:os';
import makeMdns from 'multicast-dns';
import type { Logger } from '../logging/logger.ts';

export const rpcServiceType = '_rpc._tcp.local';

export interface MdnsAdvertiserOptions {
  /** The machine's host names; each is advertised as is and with `.` replaced by `-` (A7.4). */
  readonly hostNames: readonly string[];
  /** The web port. */
  readonly port: number;
  /** A loopback listener advertises 127.0.0.1 on the loopback interface only. */
  readonly loopbackOnly: boolean;
  /** UDP port of the responder; 5353 except in tests. */
  readonly mdnsPort?: number;
  readonly logger: Logger;
}

export interface MdnsAdvertiser {
  /** The instance names answered for, e.g. `my-machine._rpc._tcp.local`. */
  readonly instances: readonly string[];
  close(): Promise<void>;
}

interface Record {
  name: string;
  type: 'PTR' | 'SRV' | 'TXT' | 'A';
  ttl: number;
  data: unknown;
}

/**
 * Advertises the machine API over multicast DNS: service `_rpc._tcp` in `local.`, TXT `grpc`, port =
 * web port. Answers PTR queries for the service type and SRV/TXT/A queries for the instances, and
 * announces itself once at start.
 */
export async function startMdnsAdvertiser(options: MdnsAdvertiserOptions): Promise<MdnsAdvertiser> {
  const labels = [...new Set(options.hostNames.flatMap((name) => [name, name.replaceAll('.', '-')]))];
  const instances = labels.map((label) => `${label.replaceAll('.', '\\.')}.${rpcServiceType}`);
  const addresses = options.loopbackOnly ? ['127.0.0.1'] : externalIpv4Addresses();
  const records = labels.flatMap((label, index): Record[] => {
    const instance = instances[index] as string;
    const target = `${label.replaceAll('.', '-')}.local`;
    return [
      { name: rpcServiceType, type: 'PTR', ttl: 120, data: instance },
      { name: instance, type: 'SRV', ttl: 120, data: { port: options.port, weight: 0, priority: 0, target } },
      { name: instance, type: 'TXT', ttl: 120, data: ['grpc'] },
      ...addresses.map((address): Record => ({ name: target, type: 'A', ttl: 120, data: address })),
    ];
  });

  const mdns = makeMdns({
    port: options.mdnsPort ?? 5353,
    reuseAddr: true,
    loopback: true,
    // Bound to the wildcard address: a socket bound to an interface address never sees multicast.
    bind: '0.0.0.0',
    ...(options.loopbackOnly ? { interface: '127.0.0.1' } : {}),
  });
  const logger = options.logger;
  mdns.on('warning', (error: Error) => logger.debug('mDNS warning', { error: error.message }));
  mdns.on('query', (query) => {
    const answers = query.questions.flatMap((question) =>
      records.filter(
        (record) =>
          record.name.toLowerCase() === question.name.toLowerCase() &&
          (question.type === record.type || (question.type as string) === 'ANY'),
      ),
    );
    if (answers.length === 0) return;
    const additionals = records.filter(
      (record) => !answers.includes(record) && record.name !== rpcServiceType,
    );
    mdns.respond({ answers, additionals } as Parameters<typeof mdns.respond>[0], (error) => {
      if (error) logger.debug('mDNS response failed', { error: error.message });
    });
  });
  await new Promise<void>((resolve, reject) => {
    mdns.once('ready', resolve);
    mdns.once('error', reject);
  });
  mdns.on('error', (error: Error) => logger.warn('mDNS responder error', { error: error.message }));
  mdns.respond({ answers: records } as Parameters<typeof mdns.respond>[0]);
  logger.debug('advertising over mDNS', { instances, port: options.port, addresses });
  return {
    instances,
    close: () => new Promise<void>((resolve) => mdns.destroy(() => resolve())),
  };
}

function externalIpv4Addresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => entry.family === 'IPv4' && !entry.internal)
    .map((entry) => entry.address);
}
