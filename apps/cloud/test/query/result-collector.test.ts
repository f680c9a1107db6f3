import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deserialize } from 'bson';
import { createResultCollector } from '../../src/domain/data/query-access/result-collector.ts';
import { DomainError } from '../../src/domain/errors.ts';

const fields = [
  { name: 'n', dataTypeID: 23 },
  { name: 'name', dataTypeID: 25 },
];
const limits = { timeoutMs: 1000, maxRows: 3, maxBytes: 1000 };

function expectError(run: () => unknown, code: string, pattern: RegExp) {
  assert.throws(run, (error: DomainError) => {
    assert.ok(error instanceof DomainError);
    assert.equal(error.code, code);
    assert.match(error.message, pattern);
    return true;
  });
}

test('rows become BSON documents as they are added', () => {
  const collector = createResultCollector(limits, 'columns');
  collector.add(['1', 'a'], fields);
  collector.add(['2', null], fields);
  const result = collector.finish(5);
  assert.deepEqual(
    result.documents.map((bytes) => deserialize(bytes)),
    [
      { n: 1, name: 'a' },
      { n: 2, name: null },
    ],
  );
  assert.equal(
    result.totalBytes,
    result.documents.reduce((sum, bytes) => sum + bytes.length, 0),
  );
});

test('over the row cap, the byte cap or the time limit, finish names the limit', () => {
  const rows = createResultCollector(limits, 'columns');
  for (let i = 0; i < 4; i++) rows.add([String(i), 'x'], fields);
  expectError(() => rows.finish(5), 'ResourceExhausted', /limit of 3 rows/);
  const bytes = createResultCollector(limits, 'columns');
  bytes.add(['1', 'y'.repeat(2000)], fields);
  expectError(() => bytes.finish(5), 'ResourceExhausted', /limit of 1000 bytes/);
  // More rows than the cap after the byte cap: the row cap is reported, as it was checked first before.
  for (let i = 0; i < 3; i++) bytes.add(['1', 'z'], fields);
  expectError(() => bytes.finish(5), 'ResourceExhausted', /limit of 3 rows/);
  const late = createResultCollector(limits, 'columns');
  expectError(() => late.finish(1001), 'DeadlineExceeded', /time limit of 1000 ms/);
});

test('json-text rows are kept as text and count against the byte cap', () => {
  const collector = createResultCollector(limits, 'json-text');
  collector.add(['{"a": 1}'], [{ name: 'doc', dataTypeID: 3802 }]);
  assert.deepEqual(collector.finish(1), { documents: [], totalBytes: 8, jsonTexts: ['{"a": 1}'] });
  const big = createResultCollector(limits, 'json-text');
  big.add([`"${'q'.repeat(1000)}"`], [{ name: 'doc', dataTypeID: 3802 }]);
  expectError(() => big.finish(1), 'ResourceExhausted', /limit of 1000 bytes/);
});
