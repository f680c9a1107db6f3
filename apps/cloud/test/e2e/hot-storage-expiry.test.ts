import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CloudConfig } from '../../src/config/cloud-config.ts';
import { createHotStorageExpiry } from '../../src/domain/data/hot-storage/hot-storage-expiry.ts';
import { createPart, type SeedPart, seedReadings } from '../support/seed-data.ts';
import { eventually, type SdkCloud, startSdkCloud } from './e2e-support.ts';
import { hotStorageConfig } from './hot-storage-fixtures.ts';

// The scheduled hot-storage expiry: the cloud's own timer (short interval, injected clock) removes the
// readings whose capture method's recent_data_store.stored_hours window has passed, and they disappear
// from HOT_STORAGE queries while the others stay; with two expiry runners only one works at a time.

const minute = 60_000;
const hour = 60 * minute;
const HOT = { type: 2 } as never;

describe('hot storage expiry', () => {
  const start = Date.now();
  let nowMs = start;
  const clock = { nowMs: () => nowMs };
  let sdk: SdkCloud;
  let part: SeedPart;

  before(async () => {
    const configure = (config: CloudConfig): CloudConfig => ({ ...config, hotStorageExpiryIntervalMs: 50 });
    sdk = await startSdkCloud('grpc', { clock, configure });
    const cloud = sdk.testCloud.cloud;
    part = await createPart(
      cloud,
      { organizationId: sdk.organizationId, locationId: sdk.locationId },
      { robotName: 'rover' },
    );
    await cloud.deps.db.query('UPDATE robot_parts SET config = $2 WHERE id = $1', [
      part.partId,
      JSON.stringify(hotStorageConfig({ short: 1, long: 3 })),
    ]);
    await seedReadings(cloud, part, { componentName: 'short' }, [
      { capturedAtMs: start - 50 * minute, data: { readings: { v: 'short-50m' } } },
      { capturedAtMs: start - 10 * minute, data: { readings: { v: 'short-10m' } } },
    ]);
    await seedReadings(cloud, part, { componentName: 'long' }, [
      { capturedAtMs: start - 10 * minute, data: { readings: { v: 'long-10m' } } },
    ]);
  });

  after(async () => {
    await sdk?.stop();
  });

  const hotValues = async () =>
    (
      (await sdk.client.dataClient.tabularDataByMQL(
        sdk.organizationId,
        [{ $project: { _id: 0, v: '$data.readings.v' } }] as never,
        false,
        HOT,
      )) as { v: string }[]
    )
      .map((row) => row.v)
      .sort();
  const hotRows = async () =>
    Number((await sdk.testCloud.cloud.deps.db.query('SELECT count(*) AS n FROM hot_readings')).rows[0].n);

  test('readings past their stored_hours leave HOT_STORAGE as the clock moves; the others stay', async () => {
    assert.deepEqual(await hotValues(), ['long-10m', 'short-10m', 'short-50m']);
    // 30 minutes on: the reading captured 50 minutes before start is past its 1-hour window.
    nowMs = start + 30 * minute;
    await eventually(async () => assert.deepEqual(await hotValues(), ['long-10m', 'short-10m']));
    assert.equal(await hotRows(), 2);
    // 2.5 hours on: the 1-hour source is empty, the 3-hour one keeps its reading.
    nowMs = start + 150 * minute;
    await eventually(async () => assert.deepEqual(await hotValues(), ['long-10m']));
    assert.equal(await hotRows(), 1);
    // STANDARD keeps everything.
    const all = await sdk.client.dataClient.tabularDataByMQL(sdk.organizationId, [{ $count: 'n' }]);
    assert.deepEqual(all, [{ n: 3 }]);
  });

  test('one pass at a time across replicas: a second runner skips while the first holds the pass', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    await seedReadings(sdk.testCloud.cloud, part, { componentName: 'long' }, [
      { capturedAtMs: Date.now() - minute, data: { readings: { v: 'late' } } },
    ]);
    const other = createHotStorageExpiry({ db, clock, intervalMs: 60_000, onError: () => {} });
    // Hold the expiry lock the way a running pass does (a session lock on one connection).
    const holder = await db.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(7204312)');
      nowMs = start + 10 * hour;
      assert.equal(await other.runOnce(AbortSignal.timeout(5_000)), undefined);
      assert.equal(await hotRows(), 2, 'nothing removed while another replica holds the pass');
      await holder.query('SELECT pg_advisory_unlock(7204312)');
    } finally {
      holder.release();
    }
    await eventually(async () => assert.equal(await hotRows(), 0));
    // Once free, the other runner gets its turn (the cloud's own 50 ms timer may be mid-pass: retry).
    await eventually(async () => assert.equal(await other.runOnce(AbortSignal.timeout(5_000)), 0));
    await other.stop();
  });
});
