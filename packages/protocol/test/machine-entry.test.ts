/**
 * `@mcloud/protocol/machine` (src/machine.ts): every namespace it exports is the same object that
 * index.ts exports, and loading it does not load the cloud-only schema (app_pb above all), which is its
 * reason to exist.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import * as protocol from '../src/index.ts';
import * as machine from '../src/machine.ts';

test('the machine entry point is a subset of index.ts', () => {
  const names = Object.keys(machine);
  assert.ok(names.length >= 16, names.join(', '));
  for (const name of names) {
    assert.equal(
      (protocol as Record<string, unknown>)[name],
      (machine as Record<string, unknown>)[name],
      name,
    );
  }
});

test('importing the machine entry point loads none of the cloud-only generated files', () => {
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
    await import(${JSON.stringify(new URL('../src/machine.ts', import.meta.url).href)});
    console.log(JSON.stringify(loaded.filter((url) => url.includes('/gen/'))));
  `;
  const loaded = JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
  ) as string[];
  assert.ok(
    loaded.some((url) => url.endsWith('/gen/robot/v1/robot_pb.js')),
    loaded.join('\n'),
  );
  for (const cloudOnly of [
    'app/v1/app_pb.js',
    'app/v1/billing_pb.js',
    'app/mltraining/v1/ml_training_pb.js',
  ]) {
    assert.ok(!loaded.some((url) => url.endsWith(`/gen/${cloudOnly}`)), `${cloudOnly} was loaded`);
  }
});
