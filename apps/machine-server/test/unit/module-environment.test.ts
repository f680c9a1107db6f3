/**
 * moduleEnvironment (src/modules/module-launch.ts): the spec's variables, plus Node's compile cache in
 * `$VIAM_HOME/compile-cache/modules/<name>` unless the environment already sets or disables it; the
 * module's own `env` wins over everything.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModuleConfig } from '../../src/config/machine-config.ts';
import { moduleEnvironment } from '../../src/modules/module-launch.ts';

function moduleConfig(env: Record<string, string> = {}): ModuleConfig {
  return {
    name: 'counter',
    executablePath: '/opt/counter/run',
    type: 'local',
    env,
    tcpMode: false,
    firstRunTimeoutMs: 3_600_000,
    path: 'modules[0]',
  };
}

const options = (inherited: Record<string, string | undefined>) => ({
  inherited,
  viamHome: '/home/pi/.viam',
  dataDir: '/home/pi/.viam/module-data/local/counter',
  executable: '/opt/counter/run',
  address: '/tmp/counter.sock',
});

test('a module gets its own compile cache directory', () => {
  const env = moduleEnvironment(moduleConfig(), options({ PATH: '/usr/bin' }));
  assert.equal(env.NODE_COMPILE_CACHE, '/home/pi/.viam/compile-cache/modules/counter');
  assert.equal(env.VIAM_MODULE_NAME, 'counter');
  assert.equal(env.PATH, '/usr/bin');
});

test('an inherited NODE_COMPILE_CACHE or NODE_DISABLE_COMPILE_CACHE is kept as it is', () => {
  const own = moduleEnvironment(moduleConfig(), options({ NODE_COMPILE_CACHE: '/var/cache/node' }));
  assert.equal(own.NODE_COMPILE_CACHE, '/var/cache/node');
  const off = moduleEnvironment(moduleConfig(), options({ NODE_DISABLE_COMPILE_CACHE: '1' }));
  assert.equal(off.NODE_COMPILE_CACHE, undefined);
  assert.equal(off.NODE_DISABLE_COMPILE_CACHE, '1');
});

test("the module's env wins", () => {
  const env = moduleEnvironment(moduleConfig({ NODE_COMPILE_CACHE: '/srv/cc' }), options({}));
  assert.equal(env.NODE_COMPILE_CACHE, '/srv/cc');
});
