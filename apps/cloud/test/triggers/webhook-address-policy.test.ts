import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadCloudConfig } from '../../src/config/cloud-config.ts';
import {
  classifyAddress,
  parseCidr,
  refusedAddressReason,
  type WebhookAddressPolicy,
} from '../../src/domain/triggers/delivery/webhook-address-policy.ts';
import { sendWebhook } from '../../src/domain/triggers/delivery/webhook-sender.ts';
import { startReceiver } from './delivery-fixtures.ts';

const cases: [string, ReturnType<typeof classifyAddress>][] = [
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['169.253.255.255', 'public'],
  ['223.255.255.255', 'public'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.1', 'link-local'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['2606:4700:4700::1111', 'public'],
  ['2001:db8::1', 'public'],
  ['::', 'unspecified'],
  ['0:0:0:0:0:0:0:0', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['fc00::1', 'private'],
  ['fdff:ffff::1', 'private'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fec0::1', 'public'],
  ['ff02::1', 'multicast'],
  ['[::1]', 'loopback'],
  // IPv4-mapped IPv6: the rules of the IPv4 address, in dotted and hexadecimal spelling.
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:a9fe:a9fe', 'link-local'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:224.0.0.1', 'multicast'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['0:0:0:0:0:ffff:c0a8:0101', 'private'],
  // NAT64 well-known prefix: the embedded IPv4 address decides.
  ['64:ff9b::169.254.169.254', 'link-local'],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['64:ff9b:1::a9fe:a9fe', 'public'],
];

test('classifies every range, IPv6 and IPv4-mapped forms', () => {
  for (const [address, expected] of cases) assert.equal(classifyAddress(address), expected, address);
  assert.throws(() => classifyAddress('example.com'), /"example.com" is not an IP address/);
});

test('default policy refuses link-local, unspecified, broadcast and multicast; allows loopback and private', () => {
  const policy: WebhookAddressPolicy = { denyPrivate: false, allowCidrs: [] };
  for (const [address, kind] of cases) {
    const refused = refusedAddressReason(address, policy);
    const expectRefused = !['public', 'loopback', 'private'].includes(kind);
    assert.equal(refused !== undefined, expectRefused, `${address}: ${refused}`);
  }
  assert.equal(
    refusedAddressReason('169.254.169.254', policy),
    'link-local (always denied unless allowed with --webhook-allow-cidr)',
  );
});

test('deny-private refuses loopback and private too; allow CIDRs win over every deny', () => {
  const policy: WebhookAddressPolicy = { denyPrivate: true, allowCidrs: [] };
  for (const [address, kind] of cases) {
    assert.equal(refusedAddressReason(address, policy) !== undefined, kind !== 'public', address);
  }
  assert.match(
    refusedAddressReason('::ffff:127.0.0.1', policy) ?? '',
    /^loopback \(denied by --webhook-deny-private/,
  );
  const allowing: WebhookAddressPolicy = {
    denyPrivate: true,
    allowCidrs: ['127.0.0.1/32', '10.20.0.0/16', 'fd00::/8', '169.254.169.254'],
  };
  assert.equal(refusedAddressReason('127.0.0.1', allowing), undefined);
  assert.equal(refusedAddressReason('::ffff:127.0.0.1', allowing), undefined);
  assert.notEqual(refusedAddressReason('127.0.0.2', allowing), undefined);
  assert.equal(refusedAddressReason('10.20.255.1', allowing), undefined);
  assert.notEqual(refusedAddressReason('10.21.0.1', allowing), undefined);
  assert.equal(refusedAddressReason('fd12::1', allowing), undefined);
  assert.notEqual(refusedAddressReason('fc12::1', allowing), undefined);
  assert.equal(refusedAddressReason('169.254.169.254', allowing), undefined);
  assert.notEqual(refusedAddressReason('::1', allowing), undefined);
});

test('CIDR parsing names the bad value', () => {
  assert.deepEqual(parseCidr('10.0.0.0/8').prefix, 8);
  assert.deepEqual(parseCidr('::ffff:10.0.0.0/104').prefix, 8);
  assert.deepEqual(parseCidr('fd00::/8').prefix, 8);
  assert.throws(() => parseCidr('10.0.0.0/33'), /"10.0.0.0\/33" has a prefix length outside 0..32/);
  assert.throws(() => parseCidr('fd00::/129'), /outside 0..128/);
  assert.throws(() => parseCidr('10.0.0/8'), /"10.0.0\/8" is not a CIDR/);
  assert.throws(() => parseCidr('10.0.0.0/8/1'), /is not a CIDR/);
  assert.throws(() => parseCidr('10.0.0.0/x'), /prefix length/);
});

test('config: --webhook-deny-private and --webhook-allow-cidr (flags and environment)', () => {
  const base = ['--port', '0'];
  assert.deepEqual(loadCloudConfig(base, {}).triggerDelivery.webhookAddressPolicy, {
    denyPrivate: false,
    allowCidrs: [],
  });
  assert.deepEqual(
    loadCloudConfig([...base, '--webhook-deny-private', '--webhook-allow-cidr', '10.0.0.0/8, fd00::/8'], {})
      .triggerDelivery.webhookAddressPolicy,
    { denyPrivate: true, allowCidrs: ['10.0.0.0/8', 'fd00::/8'] },
  );
  assert.deepEqual(
    loadCloudConfig(base, { MCLOUD_WEBHOOK_DENY_PRIVATE: 'true', MCLOUD_WEBHOOK_ALLOW_CIDR: '127.0.0.1/32' })
      .triggerDelivery.webhookAddressPolicy,
    { denyPrivate: true, allowCidrs: ['127.0.0.1/32'] },
  );
  assert.equal(
    loadCloudConfig(base, { MCLOUD_WEBHOOK_DENY_PRIVATE: 'false' }).triggerDelivery.webhookAddressPolicy
      .denyPrivate,
    false,
  );
  assert.throws(
    () => loadCloudConfig(base, { MCLOUD_WEBHOOK_DENY_PRIVATE: 'maybe' }),
    /--webhook-deny-private must be true or false \(got "maybe"\)/,
  );
  assert.throws(
    () => loadCloudConfig([...base, '--webhook-allow-cidr', '10.0.0.0/40'], {}),
    /--webhook-allow-cidr: "10.0.0.0\/40" has a prefix length outside 0..32/,
  );
});

const sendOptions = (
  policy: WebhookAddressPolicy,
  resolve?: (host: string) => Promise<{ address: string; family: number }[]>,
) => ({
  timeoutMs: 2_000,
  maxResponseBytes: 1024,
  nowMs: Date.now(),
  addressPolicy: policy,
  signal: new AbortController().signal,
  ...(resolve ? { resolve } : {}),
});

test('sender: a name resolving to any refused address sends nothing (final); the checked address is the one connected to', async () => {
  const receiver = await startReceiver();
  try {
    const request = (host: string) => ({
      method: 'GET' as const,
      url: `http://${host}:${receiver.port}/x`,
      headers: { 'User-Agent': 't' },
      body: '',
    });
    const open: WebhookAddressPolicy = { denyPrivate: false, allowCidrs: [] };
    // One public-looking and one metadata address: refused as a whole, nothing is resolved twice.
    let resolutions = 0;
    const mixed = await sendWebhook(
      request('hooks.example.test'),
      sendOptions(open, async () => {
        resolutions++;
        return [
          { address: '127.0.0.1', family: 4 },
          { address: '169.254.169.254', family: 4 },
        ];
      }),
    );
    assert.equal(mixed.delivered, false);
    assert.equal(mixed.retryable, false);
    assert.equal(mixed.statusCode, undefined);
    assert.equal(
      mixed.error,
      'refused by the webhook address policy: hooks.example.test has address 169.254.169.254, which is link-local (always denied unless allowed with --webhook-allow-cidr)',
    );
    assert.equal(resolutions, 1);
    assert.equal(receiver.requests.length, 0);
    // A made-up name pinned to the receiver's loopback address: connected there, with the name as Host.
    const pinned = await sendWebhook(
      request('hooks.example.test'),
      sendOptions(open, async () => [{ address: '127.0.0.1', family: 4 }]),
    );
    assert.equal(pinned.delivered, true, pinned.error);
    assert.equal(receiver.requests[0]?.headers.host, `hooks.example.test:${receiver.port}`);
    // Literal addresses are checked too (no resolution), including IPv4-mapped IPv6 ones.
    const deny: WebhookAddressPolicy = { denyPrivate: true, allowCidrs: [] };
    for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::1]', '0.0.0.0']) {
      const refused = await sendWebhook(request(host), sendOptions(deny));
      assert.equal(refused.retryable, false, host);
      assert.match(refused.error ?? '', /^refused by the webhook address policy: /, host);
    }
    assert.equal(receiver.requests.length, 1);
    const localhost = await sendWebhook(request('localhost'), sendOptions(deny));
    assert.match(
      localhost.error ?? '',
      /^refused by the webhook address policy: localhost has address (127\.0\.0\.1|::1), which is loopback/,
    );
    const unresolvable = await sendWebhook(request('no-such-host.invalid'), sendOptions(open));
    assert.equal(unresolvable.retryable, true);
    assert.match(unresolvable.error ?? '', /^request failed: (ENOTFOUND|EAI_AGAIN)/);
  } finally {
    await receiver.close();
  }
});
