import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { deserialize } from 'bson';
import {
  defaultQueryLimits,
  runOrganizationQuery,
} from '../../src/domain/data/query-access/organization-query.ts';
import { createOrganization } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

// Migration 0010: the sink view shows a query session only its own organization's documents.

let t: TestCloud;
let orgA: string;
let orgB: string;

async function insertPipelineWithOutput(
  organizationId: string,
  name: string,
  value: number,
): Promise<string> {
  const id = randomUUID();
  const now = new Date();
  await t.cloud.deps.db.query(
    `INSERT INTO data_pipelines (id, organization_id, name, stages, schedule, enable_backfill, data_source_type,
       enabled, created_at, updated_at) VALUES ($1, $2, $3, '{}', '0 * * * *', false, 'standard', true, $4, $4)`,
    [id, organizationId, name, now],
  );
  await t.cloud.deps.db.query(
    'INSERT INTO pipeline_sink (organization_id, pipeline_id, run_id, doc) VALUES ($1, $2, $3, $4)',
    [organizationId, id, randomUUID(), JSON.stringify({ value })],
  );
  return id;
}

before(async () => {
  t = await startTestCloud();
  orgA = t.bootstrap.organization_id;
  orgB = (await createOrganization(t.cloud, 'other')).organizationId;
  await insertPipelineWithOutput(orgA, 'p', 1);
  await insertPipelineWithOutput(orgB, 'p', 2);
});

after(async () => {
  await t?.stop();
});

test('the pipeline sink view shows only the organization of the query token', async () => {
  const result = await runOrganizationQuery(
    { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
    {
      organizationId: orgA,
      sql: 'SELECT organization_id, doc FROM pipeline_sink',
      limits: defaultQueryLimits,
    },
    new AbortController().signal,
  );
  const docs = result.documents.map((bytes) => deserialize(bytes));
  assert.equal(docs.length, 1);
  assert.equal(docs[0]?.organization_id, orgA);
  assert.deepEqual(docs[0]?.doc, { value: 1 });
});

test('the query role cannot read the sink table itself', async () => {
  await assert.rejects(
    runOrganizationQuery(
      { db: t.cloud.deps.db, clock: t.cloud.deps.clock },
      { organizationId: orgA, sql: 'SELECT doc FROM public.pipeline_sink', limits: defaultQueryLimits },
      new AbortController().signal,
    ),
    (error: { code: string }) => error.code === 'PermissionDenied',
  );
  assert.ok(orgB);
});
