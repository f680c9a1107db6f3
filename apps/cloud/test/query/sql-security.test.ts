import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { deserialize } from 'bson';
import type { Principal } from '../../src/domain/auth/principal.ts';
import {
  defaultQueryLimits,
  runOrganizationQuery,
} from '../../src/domain/data/query-access/organization-query.ts';
import { materializeAllReadingRollups } from '../../src/domain/data/rollups/reading-rollup-materializer.ts';
import { tabularDataBySql } from '../../src/domain/data/sql/tabular-data-by-sql.ts';
import { isDomainError } from '../../src/domain/errors.ts';
import { ownerOf } from '../support/owner-principal.ts';
import { createOwnAndForeignParts, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import { sqlAttacks } from './sql-attacks.ts';

// Security suite for user SQL: every attack of sql-attacks.ts, through TabularDataBySQL and straight
// through the database-enforced path, must fail or return nothing of the other organization, and must
// leave the database unchanged.

let t: TestCloud;
let orgA: string;
let orgB: string;
let principalA: Principal;
const limits = { ...defaultQueryLimits, timeoutMs: 1_500 };
const base = Date.parse('2025-03-10T00:00:00Z');

before(async () => {
  t = await startTestCloud();
  const parts = await createOwnAndForeignParts(t, {
    own: 'own',
    foreign: 'victim',
    foreignOrganization: 'victim',
  });
  const partB = parts.foreign;
  orgA = parts.own.organizationId;
  orgB = partB.organizationId;
  principalA = ownerOf(orgA);
  await seedReadings(t.cloud, parts.own, { componentName: 'own-sensor' }, [
    { capturedAtMs: base, data: { readings: { temperature: 20 } } },
  ]);
  await seedReadings(t.cloud, partB, { componentName: 'secret-b', tags: ['TOPSECRET-B'] }, [
    { capturedAtMs: base, data: { secret: 'TOPSECRET-B' } },
    { capturedAtMs: base + 1000, data: { secret: 'TOPSECRET-B' } },
  ]);
  // Rollup buckets and paths of both organizations, then a newer reading of B: marks too.
  await materializeAllReadingRollups(t.cloud.deps.db, AbortSignal.timeout(60_000));
  await seedReadings(t.cloud, partB, { componentName: 'secret-b', tags: ['TOPSECRET-B'] }, [
    { capturedAtMs: base + 7_200_000, data: { secret: 'TOPSECRET-B' } },
  ]);
  const marks = await t.cloud.deps.db.query(
    // Path statistics live in the bucket rows since migration 0027 (no paths table left).
    'SELECT count(*)::int AS marks, (SELECT count(*)::int FROM reading_rollup_buckets) AS buckets FROM reading_rollup_marks',
  );
  assert.ok(marks.rows[0].marks > 0 && marks.rows[0].buckets > 0);
  // What the rollup attacks look for is there: B's buckets, with B's keys in their path statistics.
  const foreign = await t.cloud.deps.db.query(
    "SELECT count(*)::int AS n FROM reading_rollup_buckets WHERE organization_id = $1 AND paths::text LIKE '%secret%'",
    [orgB],
  );
  assert.ok(foreign.rows[0].n > 0);
  await t.cloud.deps.db.query('ANALYZE readings; ANALYZE capture_sources');
});

after(async () => {
  await t?.stop();
});

function leaks(text: string): string | undefined {
  return [orgB, 'secret-b', 'TOPSECRET-B', 'victim'].find((marker) => text.includes(marker));
}

async function assertContained(name: string, run: () => Promise<Uint8Array[]>): Promise<void> {
  let documents: Uint8Array[];
  try {
    documents = await run();
  } catch (error) {
    assert.ok(isDomainError(error), `${name}: failed with a non-domain error: ${String(error)}`);
    assert.notEqual(error.code, 'Internal', `${name}: ${error.message}`);
    assert.equal(leaks(error.message), undefined, `${name}: the error message leaks: ${error.message}`);
    // An attack on a schema-qualified relation that no longer exists proves nothing: keep the list current.
    assert.doesNotMatch(
      error.message,
      /relation "(public|sensordata|mcloud_private)\.[^"]+" does not exist/,
      `${name}: its target is gone`,
    );
    return;
  }
  const text = JSON.stringify(documents.map((bytes) => deserialize(bytes)));
  assert.equal(leaks(text), undefined, `${name}: the result leaks: ${text.slice(0, 300)}`);
}

describe('through TabularDataBySQL (parser admission + database)', () => {
  for (const attack of sqlAttacks) {
    test(attack.name, async () => {
      const sql = attack.sql.replaceAll('{B}', orgB);
      await assertContained(attack.name, () =>
        tabularDataBySql(
          { db: t.cloud.deps.db, clock: t.cloud.deps.clock, queryLimits: limits },
          principalA,
          { organizationId: orgA, sqlQuery: sql },
          AbortSignal.timeout(10_000),
        ),
      );
    });
  }
});

describe('straight through the database-enforced path (no parser check)', () => {
  for (const attack of sqlAttacks) {
    test(attack.name, async () => {
      const sql = attack.sql.replaceAll('{B}', orgB);
      await assertContained(attack.name, async () => {
        const result = await runOrganizationQuery(
          { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
          { organizationId: orgA, sql, limits },
          AbortSignal.timeout(10_000),
        );
        return result.documents;
      });
    });
  }
});

test('the database is unchanged afterwards', async () => {
  const db = t.cloud.deps.db;
  const counts = await db.query<{ organization_id: string; n: number }>(
    'SELECT organization_id::text, count(*)::int AS n FROM readings GROUP BY 1 ORDER BY 2',
  );
  assert.deepEqual(
    counts.rows.map((row) => [row.organization_id, row.n]),
    [
      [orgA, 1],
      [orgB, 3],
    ],
  );
  // The partition the attack list reads directly exists (the attack is refused, not missing).
  const partition = await db.query("SELECT 1 FROM pg_class WHERE relname = 'readings_y2025m03'");
  assert.equal(partition.rowCount, 1);
  const stolen = await db.query("SELECT 1 FROM pg_class WHERE relname = 'stolen'");
  assert.equal(stolen.rowCount, 0);
  const view = await db.query(
    "SELECT 1 FROM pg_views WHERE schemaname = 'sensordata' AND viewname = 'readings'",
  );
  assert.equal(view.rowCount, 1);
});
