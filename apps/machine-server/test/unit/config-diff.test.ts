import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffConfigs, isEmptyDiff } from '../../src/config/config-diff.ts';
import { configTextDiff } from '../../src/config/config-text-diff.ts';
import { parseMachineConfig } from '../../src/config/machine-config.ts';

const parse = (json: object) => parseMachineConfig(json, { source: 'local' });
const names = (list: readonly { name: string }[]) => list.map((entry) => entry.name);

describe('config diff (A1.7)', () => {
  const left = parse({
    components: [
      { name: 'a', type: 'sensor', model: 'fake' },
      { name: 'b', type: 'sensor', model: 'fake', attributes: { readings: { x: 1 } } },
      { name: 'c', type: 'motor', model: 'fake' },
    ],
    modules: [{ name: 'm1', executable_path: '/bin/m1' }],
    log: [{ pattern: 'rdk.*', level: 'debug' }],
  });

  it('sorts resources into added, removed, modified and unmodified by full name', () => {
    const right = parse({
      components: [
        { name: 'a', api: 'rdk:component:sensor', model: 'rdk:builtin:fake' },
        { name: 'b', type: 'sensor', model: 'fake', attributes: { readings: { x: 2 } } },
        { name: 'c', type: 'generic', model: 'fake' },
      ],
      modules: [{ name: 'm1', executable_path: '/bin/m1', status: { error: 'ignored' } }],
      log: [{ pattern: 'rdk.*', level: 'debug' }],
    });
    const diff = diffConfigs(left, right);
    assert.deepEqual(names(diff.resources.unmodified), ['a'], 'legacy and full forms are equal');
    assert.deepEqual(names(diff.resources.modified), ['b']);
    assert.deepEqual(names(diff.resources.added), ['c']);
    assert.deepEqual(names(diff.resources.removed), ['c'], 'the motor c is removed, the generic c added');
    assert.equal(diff.modules.modified.length, 0, 'the cloud status field is ignored');
    assert.equal(diff.resourcesEqual, false);
    assert.equal(diff.logEqual, true);
    assert.equal(diff.networkEqual, true);
  });

  it('reports an identical config as empty, and log/network changes by flag', () => {
    assert.ok(isEmptyDiff(diffConfigs(left, parse(left.raw))));
    const logOnly = diffConfigs(left, parse({ ...left.raw, log: [] }));
    assert.equal(logOnly.logEqual, false);
    assert.equal(logOnly.resourcesEqual, true);
    const network = diffConfigs(left, parse({ ...left.raw, network: { bind_address: ':9090' } }));
    assert.equal(network.networkEqual, false);
    assert.equal(network.resourcesEqual, true);
  });

  it('masks secrets in the revealed text diff', () => {
    const a = {
      cloud: { id: 'p', secret: 'topsecret', location_secrets: [{ id: 'l', secret: 'locsecret' }] },
    };
    const b = {
      ...a,
      auth: { handlers: [{ type: 'api-key', config: { k1: 'keyvalue', keys: ['k1'] } }] },
      components: [{ name: 'x', type: 'sensor', model: 'fake' }],
    };
    const text = configTextDiff(a, b);
    assert.match(text, /\+ .*"x"/);
    assert.doesNotMatch(text, /topsecret|locsecret|keyvalue/);
    assert.match(text, /\*\*\*\*\*\*/);
  });
});
