import { isIP } from 'node:net';

/**
 * Which addresses a webhook may connect to (server-side request forgery). Link-local (incl. the cloud
 * metadata address 169.254.169.254), unspecified, broadcast and multicast addresses are always refused;
 * loopback and private ranges are allowed (a self-hosted cloud often calls its neighbours) unless
 * `denyPrivate`. An address inside one of `allowCidrs` is allowed whatever its class.
 */
export interface WebhookAddressPolicy {
  denyPrivate: boolean;
  /** CIDRs like `10.1.0.0/16` or `fd00::/8`; they win over every deny. */
  allowCidrs: readonly string[];
}

export const defaultWebhookAddressPolicy: WebhookAddressPolicy = { denyPrivate: false, allowCidrs: [] };

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'unspecified'
  | 'broadcast'
  | 'multicast';

/** An IP address as bytes: 4 for IPv4 (also the IPv4 inside an IPv4-mapped IPv6 address), 16 for IPv6. */
type AddressBytes = Uint8Array;

/** Parses an IPv4 or IPv6 literal (brackets and a zone `%eth0` allowed); undefined when not an address. */
export function parseIpAddress(text: string): AddressBytes | undefined {
  const address = text.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const family = isIP(address);
  if (family === 4) return Uint8Array.from(address.split('.').map(Number));
  if (family !== 6) return undefined;
  const bytes = ipv6Bytes(address);
  // IPv4-mapped (::ffff:a.b.c.d) is the IPv4 address: one set of rules for both spellings. So is the
  // NAT64 well-known prefix (64:ff9b::a.b.c.d): a NAT64 gateway would connect to the IPv4 address.
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  const nat64 =
    [0, 0x64, 0xff, 0x9b].every((b, i) => bytes[i] === b) && bytes.slice(4, 12).every((b) => b === 0);
  return mapped || nat64 ? bytes.slice(12) : bytes;
}

function ipv6Bytes(address: string): AddressBytes {
  let text = address;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    tail.push(...dotted[1].split('.').map(Number));
    text = `${text.slice(0, -dotted[1].length)}0:0`;
  }
  const [head = '', rest] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => {
    bytes[i * 2] = word >> 8;
    bytes[i * 2 + 1] = word & 0xff;
  });
  if (tail.length === 4) bytes.set(tail, 12);
  return bytes;
}

interface Cidr {
  bytes: AddressBytes;
  prefix: number;
}

/** Parses `address/prefix` (a bare address is a single-address CIDR); throws a message naming the value. */
export function parseCidr(text: string): Cidr {
  const [address = '', prefixText, extra] = text.trim().split('/');
  const parsed = parseIpAddress(address);
  if (!parsed || extra !== undefined) {
    throw new Error(`${JSON.stringify(text)} is not a CIDR like 10.0.0.0/8 or fd00::/8`);
  }
  const ipv6Text = isIP(address.replace(/^\[(.*)\]$/, '$1')) === 6;
  // An IPv4-mapped CIDR (::ffff:10.0.0.0/104) is the IPv4 CIDR: its prefix loses the 96 mapped bits.
  const offset = ipv6Text && parsed.length === 4 ? 96 : 0;
  const max = parsed.length * 8 + offset;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!/^\d+$/.test(prefixText ?? String(max)) || prefix < offset || prefix > max) {
    throw new Error(`${JSON.stringify(text)} has a prefix length outside ${offset}..${max}`);
  }
  return { bytes: parsed, prefix: prefix - offset };
}

function inCidr(address: AddressBytes, cidr: Cidr): boolean {
  if (address.length !== cidr.bytes.length) return false;
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((address[i] ?? 0) & mask) !== ((cidr.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

const range = (text: string) => parseCidr(text);
const classRanges: readonly [AddressClass, Cidr][] = [
  ['unspecified', range('0.0.0.0/8')],
  ['loopback', range('127.0.0.0/8')],
  ['private', range('10.0.0.0/8')],
  ['private', range('172.16.0.0/12')],
  ['private', range('192.168.0.0/16')],
  ['link-local', range('169.254.0.0/16')],
  ['multicast', range('224.0.0.0/4')],
  ['broadcast', range('255.255.255.255/32')],
  ['unspecified', range('::/128')],
  ['loopback', range('::1/128')],
  ['private', range('fc00::/7')],
  ['link-local', range('fe80::/10')],
  ['multicast', range('ff00::/8')],
];

/** The class of an address literal (IPv4, IPv6 or IPv4-mapped); throws when `address` is not one. */
export function classifyAddress(address: string): AddressClass {
  const bytes = parseIpAddress(address);
  if (!bytes) throw new Error(`${JSON.stringify(address)} is not an IP address`);
  return classRanges.find(([, cidr]) => inCidr(bytes, cidr))?.[0] ?? 'public';
}

/** Undefined when the policy allows `address`; else its class and why it is refused (`loopback (denied by …)`). */
export function refusedAddressReason(address: string, policy: WebhookAddressPolicy): string | undefined {
  const bytes = parseIpAddress(address);
  if (!bytes) return `${JSON.stringify(address)} is not an IP address`;
  if (policy.allowCidrs.some((cidr) => inCidr(bytes, parseCidr(cidr)))) return undefined;
  const kind = classifyAddress(address);
  if (kind === 'public') return undefined;
  if ((kind === 'loopback' || kind === 'private') && !policy.denyPrivate) return undefined;
  const hint =
    kind === 'loopback' || kind === 'private'
      ? 'denied by --webhook-deny-private; allow it with --webhook-allow-cidr'
      : 'always denied unless allowed with --webhook-allow-cidr';
  return `${kind} (${hint})`;
}
