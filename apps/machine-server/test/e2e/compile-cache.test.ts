/**
 * The bin turns on Node's compile cache in `$VIAM_HOME/compile-cache` (src/bin/machine-server.js): a
 * real process fills it at exit, a restart with the same VIAM_HOME takes every type-stripped module from
 * it (Node's own COMPILE_CACHE debug output says so), and NODE_DISABLE_COMPILE_CACHE=1 leaves it alone.
 * The same output lists every module loaded: none of the cloud-only protocol files.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { startMachineProcess } from '../support/machine-process.ts';

const config = { components: [{ name: 'sensor1', api: 'rdk:component:sensor', model: 'fake' }] };
const cacheDebug = { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' };

async function cacheFiles(viamHome: string): Promise<string[]> {
  const entries = await readdir(path.join(viamHome, 'compile-cache'), { recursive: true }).catch(() => []);
  return entries.filter((entry) => entry.includes(path.sep)).sort();
}

test('the machine-server bin keeps a compile cache in VIAM_HOME and restarts from it', async () => {
  const first = await startMachineProcess({ config, env: { NODE_DISABLE_COMPILE_CACHE: '1' } });
  try {
    await first.waitForLine(/machine-server ready/);
    assert.equal(await first.stop(), 0);
    assert.deepEqual(await cacheFiles(first.viamHome), [], 'NODE_DISABLE_COMPILE_CACHE=1 writes no cache');
    assert.equal(((await stat(first.viamHome)).mode & 0o777).toString(8), '700');

    const second = await startMachineProcess({ config, dir: first.dir, env: cacheDebug });
    await second.waitForLine(/machine-server ready/);
    assert.equal(await second.stop(), 0);
    assert.ok(
      second.lines.some((line) =>
        /no transpile cache for StrippedTypeScript .*machine-server\.ts/.test(line),
      ),
    );
    const written = await cacheFiles(first.viamHome);
    // One file per compiled module: the program, its libraries, the generated protocol code.
    assert.ok(written.length > 100, `compile cache files after one run: ${written.length}`);

    // What an older Node left behind: removed by the next start.
    const stale = path.join(first.viamHome, 'compile-cache', 'v22.0.0-x64-deadbeef-0');
    await mkdir(stale);
    await writeFile(path.join(stale, '0123abcd'), 'old');
    const third = await startMachineProcess({ config, dir: first.dir, env: cacheDebug });
    await third.waitForLine(/machine-server ready/);
    assert.equal(await third.stop(), 0);
    const misses = third.lines.filter((line) => /no transpile cache|was rejected/.test(line));
    assert.deepEqual(misses, [], 'a restart compiles nothing anew');
    assert.ok(
      third.lines.some((line) =>
        /retrieving transpile cache for StrippedTypeScript .*bin\/machine-server\.ts\.\.\.success/.test(line),
      ),
    );
    assert.deepEqual(
      await cacheFiles(first.viamHome),
      written,
      'a warm start adds nothing; the stale cache is gone',
    );
    // The debug output names every module loaded: the cloud-only schema stays out (@mcloud/protocol/machine).
    assert.ok(third.lines.some((line) => line.includes('/gen/robot/v1/robot_pb.js')));
    assert.deepEqual(
      third.lines.filter((line) => /\/gen\/app\/v1\/(app|billing|end_user)_pb\.js/.test(line)),
      [],
      'the machine-server loads the cloud-only protocol files: import @mcloud/protocol/machine instead',
    );
  } finally {
    await first.stop();
    await rm(first.dir, { recursive: true, force: true });
  }
});
