/** The host network counters of the metrics sampler, read from a `/proc/net/dev`-shaped file. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { networkCounters } from '../../src/diagnostics/process-metrics.ts';

test('network counters add up every interface except loopback; no file, no counters', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'proc-net-dev-'));
  try {
    const file = path.join(dir, 'dev');
    await writeFile(
      file,
      [
        'Inter-|   Receive                                                |  Transmit',
        ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
        '    lo: 5000 50 0 0 0 0 0 0 5000 50 0 0 0 0 0 0',
        '  eth0: 1000 10 0 0 0 0 0 0 300 3 0 0 0 0 0 0',
        ' wlan0:  200  2 0 0 0 0 0 0  40 1 0 0 0 0 0 0',
        '',
      ].join('\n'),
    );
    assert.deepEqual(networkCounters(file), {
      'net.rx_bytes': 1200,
      'net.rx_packets': 12,
      'net.tx_bytes': 340,
      'net.tx_packets': 4,
    });
    assert.deepEqual(networkCounters(path.join(dir, 'missing')), {});
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
