import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  builtinModel,
  componentApi,
  createResourceName,
  formatModel,
  formatResourceName,
  parseApi,
  parseModel,
  parseResourceName,
  shortName,
} from '../../src/resources/resource-name.ts';

describe('resource names (A2.1)', () => {
  it('parses and formats full names, including remote chains', () => {
    const name = parseResourceName('rdk:component:arm/robot2:arm1');
    assert.deepEqual(name.api, componentApi('arm'));
    assert.deepEqual(name.remotePath, ['robot2']);
    assert.equal(name.name, 'arm1');
    assert.equal(shortName(name), 'robot2:arm1');
    assert.equal(formatResourceName(name), 'rdk:component:arm/robot2:arm1');
    assert.equal(
      formatResourceName(createResourceName(componentApi('sensor'), 'left')),
      'rdk:component:sensor/left',
    );
  });

  it('rejects names that are not fully qualified, naming the field', () => {
    assert.throws(
      () => parseResourceName('sensor/left', 'maintenance.sensor_name'),
      /maintenance\.sensor_name: must be a full resource name/,
    );
    assert.throws(() => parseResourceName('rdk:component:sensor/le ft'), /segments must be/);
    assert.throws(() => parseApi('rdk:component'), /api: must be an API triple/);
  });

  it('expands bare models and accepts the object form', () => {
    assert.deepEqual(parseModel('fake'), builtinModel('fake'));
    assert.equal(formatModel(parseModel('acme:demo:thing')), 'acme:demo:thing');
    assert.equal(
      formatModel(parseModel({ namespace: 'acme', model_family: 'demo', name: 'x' })),
      'acme:demo:x',
    );
    assert.throws(() => parseModel('a:b'), /model: must be a model triple/);
    assert.throws(() => parseModel('a:b:c d', 'components[0].model'), /components\[0\]\.model/);
  });
});
