import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { dataPb } from '@mcloud/protocol';
import { ensureReadingPartitions, monthIndexOf } from '../../src/domain/data/ingest/reading-partitions.ts';
import { emptyFilter } from '../../src/domain/data/query/data-filter.ts';
import { tabularDataByFilter } from '../../src/domain/data/query/tabular-queries.ts';
import { selectReadingsPage } from '../../src/domain/data/query/tabular-repository.ts';
import type { Queryable } from '../../src/infra/postgres/database.ts';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { createPart, seedReadings } from '../support/seed-data.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

/**
 * First-page latency of TabularDataByFilter over many stored readings (default 200k; set
 * MCLOUD_SCALE_ROWS=1000000 for the 1M measurement) and the plans behind it: index scans with the
 * limit pushed down, never a sort over all rows.
 */
const rows = Number(process.env.MCLOUD_SCALE_ROWS ?? 200_000);
const sources = 20;
const start = Date.parse('2025-01-01T00:00:00Z');
const spanMs = 90 * 24 * 60 * 60 * 1000;
let t: TestCloud;
let owner: AuthedClients;
const sourceIds: string[] = [];

before(async () => {
  t = await startTestCloud();
  owner = await createAuthedClients(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key });
  const org = t.bootstrap.organization_id;
  const parts = [
    await createPart(
      t.cloud,
      { organizationId: org, locationId: t.bootstrap.location_id },
      { robotName: 'a' },
    ),
    await createPart(
      t.cloud,
      { organizationId: org, locationId: t.bootstrap.location_id },
      { robotName: 'b' },
    ),
  ];
  for (let i = 0; i < sources; i++) {
    const part = parts[i % 2];
    assert.ok(part);
    sourceIds.push(
      await seedReadings(t.cloud, part, { componentName: `sensor-${i}` }, [
        { capturedAtMs: start, data: { first: true } },
      ]),
    );
  }
  const months = new Set<number>();
  for (let ms = start; ms <= start + spanMs; ms += 24 * 60 * 60 * 1000) months.add(monthIndexOf(ms));
  await ensureReadingPartitions(t.cloud.deps.db, months);
  await t.cloud.deps.db.query(
    `INSERT INTO readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data)
     SELECT $1, ($2::bigint[])[1 + g % $3], ts, ts, ts, ts, 40, jsonb_build_object('readings', jsonb_build_object('v', g))
       FROM generate_series(1, $4::int) AS g,
            LATERAL (SELECT $5::timestamptz + (g::float8 / $4 * $6) * interval '1 millisecond' AS ts) AS t`,
    [org, sourceIds, sources, rows, new Date(start), spanMs],
  );
  await t.cloud.deps.db.query('ANALYZE readings');
  await t.cloud.deps.db.query('ANALYZE capture_sources');
});
after(async () => {
  await t?.stop();
});

async function p50(call: () => Promise<unknown>, runs = 60): Promise<number> {
  for (let i = 0; i < 5; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const begin = performance.now();
    await call();
    times.push(performance.now() - begin);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** The SQL selectReadingsPage would run, captured instead of executed, then EXPLAIN ANALYZEd. */
async function explain(query: Parameters<typeof selectReadingsPage>[1]): Promise<string> {
  let captured: { sql: string; params: unknown[] } | undefined;
  const recorder = {
    query: async (sql: string | { text: string; values: unknown[] }, params: unknown[]) => {
      captured = typeof sql === 'string' ? { sql, params } : { sql: sql.text, params: sql.values };
      return { rows: [] };
    },
  } as unknown as Queryable;
  await selectReadingsPage(recorder, query);
  assert.ok(captured);
  const result = await t.cloud.deps.db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, COSTS OFF) ${captured.sql}`,
    captured.params,
  );
  return result.rows.map((row) => row['QUERY PLAN']).join('\n');
}

test(`first page of TabularDataByFilter over ${rows} readings`, async () => {
  const organizationIds = [t.bootstrap.organization_id];
  const organizationPlan = await explain({
    key: { kind: 'organizations', organizationIds },
    window: {},
    order: 'descending',
    limit: 50,
  });
  const sourcePlan = await explain({
    key: { kind: 'sources', sourceIds: sourceIds.slice(0, 1) },
    window: {},
    order: 'ascending',
    limit: 50,
  });
  const manySourcesPlan = await explain({
    key: { kind: 'sources', sourceIds: sourceIds.slice(0, 5) },
    window: {},
    order: 'descending',
    limit: 50,
  });
  console.log(
    `--- organization-wide, newest first\n${organizationPlan}\n--- one source, oldest first\n${sourcePlan}\n--- five sources\n${manySourcesPlan}`,
  );
  assert.match(organizationPlan, /readings_organization_time|organization_id_captured_at_id_idx/);
  assert.match(sourcePlan, /source_id_captured_at_id_idx|readings_source_time/);
  for (const plan of [organizationPlan, sourcePlan, manySourcesPlan]) assert.doesNotMatch(plan, /Seq Scan/);

  const firstPage = () =>
    owner.data.tabularDataByFilter({ dataRequest: { limit: 50n, sortOrder: dataPb.Order.DESCENDING } });
  const page = await firstPage();
  assert.equal(page.data.length, 50);
  const unfiltered = await p50(firstPage);
  const filtered = await p50(() =>
    owner.data.tabularDataByFilter({ dataRequest: { filter: { componentName: 'sensor-3' }, limit: 50n } }),
  );
  const deep = await p50(() =>
    owner.data.tabularDataByFilter({
      dataRequest: { limit: 50n, last: page.last, sortOrder: dataPb.Order.ASCENDING },
    }),
  );
  const principal = await t.cloud.deps.authenticator.principalFromToken(owner.accessToken);
  const domain = await p50(() =>
    tabularDataByFilter(t.cloud.deps, principal, {
      filter: emptyFilter,
      limit: 50,
      last: '',
      order: 'descending',
      countOnly: false,
    }),
  );
  const baseline = await p50(() =>
    owner.dataset.listDatasetsByOrganizationID({ organizationId: t.bootstrap.organization_id }),
  );
  const web = await createAuthedClients(
    t.url,
    { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key },
    'grpc-web',
  );
  const webFirstPage = await p50(() =>
    web.data.tabularDataByFilter({ dataRequest: { limit: 50n, sortOrder: dataPb.Order.DESCENDING } }),
  );
  const webBaseline = await p50(() =>
    web.dataset.listDatasetsByOrganizationID({ organizationId: t.bootstrap.organization_id }),
  );
  console.log(
    `gRPC-web (HTTP/1.1) p50: first page ${webFirstPage.toFixed(2)} ms, trivial RPC ${webBaseline.toFixed(2)} ms`,
  );
  console.log(
    `server-side p50 (domain call, no transport): ${domain.toFixed(2)} ms; trivial RPC baseline p50 ${baseline.toFixed(2)} ms`,
  );
  console.log(
    `p50 over ${rows} readings: first page ${unfiltered.toFixed(2)} ms, filtered ${filtered.toFixed(2)} ms, cursor page ${deep.toFixed(2)} ms (end to end through gRPC)`,
  );
  // The target (≤ 5 ms at 1M rows) is for the server's work; transport overhead is measured separately above.
  assert.ok(domain < 25, `server-side first page p50 ${domain} ms`);
});
