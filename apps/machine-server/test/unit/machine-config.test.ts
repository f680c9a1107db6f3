import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  parseMachineConfig,
  parseMachineConfigText,
  substituteEnv,
} from '../../src/config/machine-config.ts';
import { formatModel, formatResourceName } from '../../src/resources/resource-name.ts';

describe('machine config parsing (A1.1, A2.1)', () => {
  it('normalizes legacy type/namespace forms, service defaults and optional fields', () => {
    const config = parseMachineConfig(
      {
        components: [
          {
            name: 's1',
            type: 'sensor',
            model: 'fake',
            depends_on: ['m1'],
            log_configuration: { level: 'Debug' },
          },
          { name: 'm1', api: 'rdk:component:motor', model: 'rdk:builtin:fake', attributes: { max_rpm: 100 } },
          { name: 'x', namespace: 'acme', type: 'gizmo', model: 'acme:demo:gizmo' },
        ],
        services: [{ type: 'data_manager', service_config: [] }],
      },
      { source: 'local' },
    );
    const [s1, m1, x] = config.components.map((c) => c);
    assert.ok(s1 && m1 && x);
    assert.equal(formatResourceName(s1.resourceName), 'rdk:component:sensor/s1');
    assert.equal(s1.logLevel, 'debug');
    assert.deepEqual(s1.dependsOn, ['m1']);
    assert.deepEqual(m1.attributes, { max_rpm: 100 });
    assert.equal(formatResourceName(x.resourceName), 'acme:component:gizmo/x');
    const service = config.services[0];
    assert.ok(service);
    assert.equal(formatResourceName(service.resourceName), 'rdk:service:data_manager/builtin');
    assert.equal(formatModel(service.model), 'rdk:builtin:builtin');
    assert.equal(config.network.bindAddress, 'localhost:8080');
  });

  it('names the path of the offending field', () => {
    const cases: [unknown, RegExp][] = [
      [
        {
          components: [
            { name: 'a', type: 'sensor', model: 'fake' },
            { name: 'b', model: 'fake' },
          ],
        },
        /components\[1\]\.api: is required/,
      ],
      [{ components: [{ name: 'a', type: 'sensor' }] }, /components\[0\]\.model: is required/],
      [{ components: [{ name: 'a b', type: 'sensor', model: 'fake' }] }, /components\[0\]\.name/],
      [
        { components: [{ name: 'a', type: 'sensor', model: 'fake', log_configuration: { level: 'loud' } }] },
        /components\[0\]\.log_configuration\.level/,
      ],
      [{ cloud: { id: 'p' } }, /cloud: needs "secret" or "api_key"/],
      [{ cloud: { id: 'p', api_key: { id: 'k' } } }, /cloud\.api_key: needs both/],
      [{ cloud: { id: 'p', secret: 's', refresh_interval: 'soon' } }, /cloud\.refresh_interval/],
      [{ network: { bind_address: 'nope' } }, /network\.bind_address/],
      [{ modules: [{ name: 'parent', executable_path: '/x' }] }, /modules\[0\]\.name: "parent" is reserved/],
      [{ auth: { handlers: [{ type: 'external', config: {} }] } }, /auth\.handlers\[0\]\.type/],
      [{ maintenance: { sensor_name: 'rdk:component:sensor/m' } }, /maintenance\.maintenance_allowed_key/],
      [{ colour: 'blue' }, /colour: is not a configuration field/],
    ];
    for (const [json, pattern] of cases) {
      assert.throws(() => parseMachineConfig(json, { source: 'local' }), pattern, JSON.stringify(json));
    }
    assert.throws(
      () => parseMachineConfigText('{"components": [', {}, { source: 'local' }),
      /not valid JSON/,
    );
  });

  it('reads cloud credentials, refresh interval and cloud-delivered requirements', () => {
    const local = parseMachineConfig(
      {
        cloud: {
          id: 'part',
          api_key: { id: 'k', key: 'v' },
          app_address: 'http://h:1',
          refresh_interval: '1m30s',
        },
      },
      { source: 'local' },
    );
    assert.equal(local.cloud?.refreshIntervalMs, 90_000);
    assert.deepEqual(local.cloud?.apiKey, { id: 'k', key: 'v' });
    assert.equal(
      parseMachineConfig({ cloud: { id: 'p', secret: 's' } }, { source: 'local' }).cloud?.refreshIntervalMs,
      15_000,
    );
    assert.throws(
      () => parseMachineConfig({ cloud: { id: 'p', fqdn: 'f' } }, { source: 'cloud' }),
      /cloud\.local_fqdn/,
    );
  });

  it('substitutes environment variables before parsing', () => {
    assert.equal(substituteEnv('a $X $' + '{Y} $$ $NOPE', { X: '1', Y: 'two"' }), 'a 1 two\\" $ ');
    const config = parseMachineConfigText(
      '{"components":[{"name":"$N","type":"sensor","model":"fake"}]}',
      { N: 'env1' },
      { source: 'local' },
    );
    assert.equal(config.components[0]?.name, 'env1');
  });
});
