import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../../src/infra/postgres/database.ts';
import { createMigratedDatabase, type MigratedDatabase } from '../support/test-database.ts';
import { loadDocuments, runCompiled, type TestDocument } from './mql-support.ts';

/**
 * `$unwind` of an array inside a document builds each output document from the document without the array
 * (computed once per input document) plus one element, so its cost grows linearly with the number of
 * elements. Building it from the whole document per element costs elements × document size: quadratic.
 */

let database: MigratedDatabase;
let db: Database;

before(async () => {
  database = await createMigratedDatabase(2);
  db = database.db;
});

after(() => database.close());

function documentWith(elements: number): TestDocument {
  return {
    _id: `doc-${elements}`,
    component_name: 'lidar',
    method_name: 'Readings',
    time_received: new Date(Date.parse('2025-03-10T00:00:00Z')),
    tags: ['a'],
    data: {
      unit: 'mm',
      scan: {
        id: 7,
        points: Array.from({ length: elements }, (_, i) => ({
          i,
          x: i * 0.5,
          y: 1 - i,
          label: `p${i % 10}`,
        })),
      },
    },
  };
}

const unwind = [{ $unwind: { path: '$data.scan.points', includeArrayIndex: 'n' } }];

/** Median of several runs of the pipeline over one document with `elements` array elements, in ms. */
async function medianMs(elements: number, runs = 5): Promise<number> {
  await loadDocuments(db, [documentWith(elements)]);
  await runCompiled(db, unwind);
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const rows = await runCompiled(db, unwind);
    times.push(performance.now() - started);
    assert.equal(rows.length, elements);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)] as number;
}

test('$unwind output: the rest of the document once per element, the element and its index', async () => {
  await loadDocuments(db, [documentWith(3)]);
  const rows = await runCompiled(db, [
    { $unwind: { path: '$data.scan.points', includeArrayIndex: 'n' } },
    { $project: { _id: 0, n: 1, data: 1 } },
  ]);
  assert.deepEqual(
    rows,
    [0, 1, 2].map((i) => ({
      n: i,
      data: { unit: 'mm', scan: { id: 7, points: { i, x: i * 0.5, y: 1 - i, label: `p${i}` } } },
    })),
  );
});

test('$unwind of a 1,000-element array costs linearly in the number of elements', async () => {
  const small = await medianMs(1000);
  const large = await medianMs(3000);
  const ratio = large / small;
  console.log(
    `$unwind: 1,000 elements ${small.toFixed(1)} ms, 3,000 elements ${large.toFixed(1)} ms (×${ratio.toFixed(1)})`,
  );
  // Linear: ×3 (plus noise); quadratic: ×9.
  assert.ok(ratio < 6, `3× the elements took ${ratio.toFixed(1)}× the time`);
});
