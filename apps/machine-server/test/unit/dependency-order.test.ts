import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dependencyLevels, dependentsOf, resolveDependency } from '../../src/resources/dependency-order.ts';
import { componentApi, createResourceName, formatResourceName } from '../../src/resources/resource-name.ts';

describe('dependency order (A2.2, A2.4)', () => {
  it('sorts into levels where level k depends only on lower levels', () => {
    const edges = new Map([
      ['a', []],
      ['b', ['a']],
      ['c', ['a', 'b']],
      ['d', []],
      ['e', ['d', 'c']],
    ]);
    const { levels, cycles } = dependencyLevels(edges);
    assert.deepEqual(levels, [['a', 'd'], ['b'], ['c'], ['e']]);
    assert.equal(cycles.size, 0);
  });

  it('reports cycles (and self-loops) without hiding the rest', () => {
    const edges = new Map([
      ['a', ['b']],
      ['b', ['a']],
      ['c', ['c']],
      ['d', ['a']],
      ['e', []],
    ]);
    const { levels, cycles } = dependencyLevels(edges);
    assert.equal(cycles.get('a'), 'dependency cycle: a -> b -> a');
    assert.ok(cycles.has('b'));
    assert.ok(cycles.has('c'));
    assert.deepEqual(levels, [['d', 'e']]);
  });

  it('finds transitive dependents', () => {
    const edges = new Map([
      ['a', []],
      ['b', ['a']],
      ['c', ['b']],
      ['x', []],
    ]);
    assert.deepEqual([...dependentsOf(['a'], edges)].sort(), ['b', 'c']);
  });

  it('resolves short and full names, and reports conflicts', () => {
    const nodes = [
      createResourceName(componentApi('sensor'), 's1'),
      createResourceName(componentApi('motor'), 'm1'),
      createResourceName(componentApi('camera'), 'm1'),
    ].map((name) => ({ key: formatResourceName(name), name }));
    assert.deepEqual(resolveDependency('s1', nodes, 'x'), {
      kind: 'resolved',
      key: 'rdk:component:sensor/s1',
    });
    assert.deepEqual(resolveDependency('rdk:component:motor/m1', nodes, 'x'), {
      kind: 'resolved',
      key: 'rdk:component:motor/m1',
    });
    assert.equal(resolveDependency('m1', nodes, 'x').kind, 'error');
    assert.equal(resolveDependency('nope', nodes, 'x').kind, 'unresolved');
    assert.equal(resolveDependency('s1', nodes, 'rdk:component:sensor/s1').kind, 'error');
  });
});
