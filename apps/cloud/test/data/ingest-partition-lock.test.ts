import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import pg from 'pg';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  apiKeyClient,
  createSecondOrganization,
  createTestPart,
  type DataSyncClient,
  dataSyncClient,
  type TestPart,
  tokenFor,
  ts,
  uploadMetadata,
} from './ingest-fixtures.ts';

/**
 * A session reading `readings` in an open transaction (a BI database user) blocks the creation of a new
 * month partition. Ingest must not hang behind it (nor make every other upload wait behind its queued
 * lock): it answers Unavailable after its bounded lock waits, stores nothing, and the retried upload
 * succeeds once the lock is gone.
 */

let t: TestCloud;
let client: DataSyncClient;
let part: TestPart;
let otherClient: DataSyncClient;
let otherPart: TestPart;

before(async () => {
  t = await startTestCloud();
  client = await apiKeyClient(t);
  part = await createTestPart(t, t.bootstrap.organization_id, t.bootstrap.location_id);
  const other = await createSecondOrganization(t);
  otherPart = await createTestPart(t, other.organizationId, other.locationId);
  otherClient = dataSyncClient(
    t.url,
    await tokenFor(t.url, { type: 'api-key', entity: other.apiKeyId, payload: other.apiKey }),
  );
});
after(async () => {
  await t?.stop();
});

function upload(target: DataSyncClient, partId: string, ms: number, value: number) {
  return target.dataCaptureUpload({
    metadata: uploadMetadata(partId),
    sensorContents: [
      {
        metadata: { timeRequested: ts(ms), timeReceived: ts(ms + 5) },
        data: { case: 'struct' as const, value: { readings: { value } } },
      },
    ],
  });
}

async function countReadings(organizationId: string, fromMs: number, toMs: number): Promise<number> {
  const result = await t.cloud.deps.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM readings
      WHERE organization_id = $1 AND captured_at >= to_timestamp($2 / 1000.0) AND captured_at < to_timestamp($3 / 1000.0)`,
    [organizationId, fromMs, toMs],
  );
  return result.rows[0]?.n ?? -1;
}

test('a lock held on readings answers a new month Unavailable in bounded time; the retry stores it once', async (context) => {
  const existingMonth = Date.UTC(2025, 5, 10);
  await upload(otherClient, otherPart.partId, existingMonth, 1); // the other organization's month exists
  const newMonth = Date.UTC(2019, 0, 15);
  const newMonthEnd = Date.UTC(2019, 1, 1);

  const databaseUrl = t.cloud.deps.config.databaseUrl;
  assert.ok(databaseUrl);
  const holder = new pg.Client({ connectionString: databaseUrl });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT count(*) FROM readings'); // ACCESS SHARE on readings until the transaction ends

    const started = performance.now();
    const blocked = upload(client, part.partId, newMonth, 7).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Meanwhile another organization's upload to an existing month goes through (it waits at most one
    // lock_timeout behind the queued DDL, not until the reader is done).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const otherStarted = performance.now();
    await upload(otherClient, otherPart.partId, existingMonth + 1000, 2);
    const otherMs = performance.now() - otherStarted;
    assert.ok(otherMs < 3000, `the other organization's upload waited ${Math.round(otherMs)} ms`);

    const error = await blocked;
    const elapsedMs = performance.now() - started;
    assert.ok(error instanceof ConnectError, `expected Unavailable, got ${String(error)}`);
    assert.equal(error.code, Code.Unavailable, error.message);
    assert.match(error.rawMessage, /readings_y2019m01.*lock_timeout 1000 ms.*retry/);
    context.diagnostic(
      `Unavailable after ${Math.round(elapsedMs)} ms; other upload ${Math.round(otherMs)} ms`,
    );
    assert.ok(elapsedMs < 10_000, `answered after ${Math.round(elapsedMs)} ms`);
    assert.ok(
      elapsedMs >= 3000,
      `3 attempts of 1 s lock_timeout, answered after ${Math.round(elapsedMs)} ms`,
    );

    // Nothing of the refused upload was stored; the partition does not exist yet.
    const partition = await t.cloud.deps.db.query(`SELECT to_regclass('readings_y2019m01') AS name`);
    assert.equal(partition.rows[0]?.name, null);
    // The lock holder's session was not disturbed.
    await holder.query('SELECT 1');
  } finally {
    await holder.query('COMMIT').catch(() => {});
    await holder.end();
  }

  // The machine's syncer retries: now it is stored, exactly once.
  await upload(client, part.partId, newMonth, 7);
  assert.equal(await countReadings(part.organizationId, newMonth - 1, newMonthEnd), 1);
  assert.equal(await countReadings(otherPart.organizationId, existingMonth, existingMonth + 2000), 2);
});
