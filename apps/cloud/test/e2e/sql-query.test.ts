import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Code, expectRpcError, sdkTransportKinds } from '@mcloud/sdk-testkit';
import { createOrganization, createPart, createScopedKey, seedReadings } from '../support/seed-data.ts';
import { type SdkCloud, startSdkCloud } from './e2e-support.ts';

// TabularDataBySQL, GetDatabaseConnection and ConfigureDatabaseUser through the real @viamrobotics/sdk:
// results are decoded by the SDK's own BSON decoder.

const base = Date.parse('2025-03-10T00:00:00Z');

for (const transport of sdkTransportKinds) {
  describe(`SQL over ${transport}`, () => {
    let sdk: SdkCloud;
    let foreignOrg: string;

    before(async () => {
      sdk = await startSdkCloud(transport);
      const cloud = sdk.testCloud.cloud;
      const part = await createPart(
        cloud,
        { organizationId: sdk.organizationId, locationId: sdk.locationId },
        {
          robotName: 'rover',
        },
      );
      await seedReadings(cloud, part, { componentName: 'thermo', tags: ['lab'] }, [
        { capturedAtMs: base, data: { readings: { temperature: 20.5, humidity: 61, label: 'cold' } } },
        { capturedAtMs: base + 60_000, data: { readings: { temperature: 22, humidity: 60, label: 'warm' } } },
        {
          capturedAtMs: base + 120_000,
          data: { readings: { temperature: 25.25, humidity: 58, label: 'hot' } },
        },
      ]);
      await seedReadings(cloud, part, { componentName: 'motor', methodName: 'Position' }, [
        { capturedAtMs: base, data: { position: 145.7 } },
      ]);
      const foreign = await createOrganization(cloud, 'foreign');
      foreignOrg = foreign.organizationId;
      const foreignPart = await createPart(
        cloud,
        { organizationId: foreignOrg, locationId: foreign.locationId },
        {
          robotName: 'spy',
        },
      );
      await seedReadings(cloud, foreignPart, { componentName: 'thermo' }, [
        { capturedAtMs: base, data: { readings: { temperature: 99 } } },
      ]);
    });

    after(async () => {
      await sdk?.stop();
    });

    test('the reference dotted-path style with CAST(... AS TIMESTAMP), decoded by the SDK', async () => {
      const rows = (await sdk.client.dataClient.tabularDataBySQL(
        sdk.organizationId,
        `SELECT time_received, data.readings.temperature AS t, data.readings.label FROM sensorData.readings
          WHERE component_name = 'thermo' AND time_received >= CAST('2025-03-10T00:01:00.000Z' AS TIMESTAMP)
          ORDER BY time_received`,
      )) as Record<string, unknown>[];
      assert.deepEqual(rows, [
        { time_received: new Date(base + 60_000), t: 22, label: 'warm' },
        { time_received: new Date(base + 120_000), t: 25.25, label: 'hot' },
      ]);
    });

    test('PostgreSQL syntax: aggregates, GROUP BY, jsonb operators, whole documents', async () => {
      const grouped = (await sdk.client.dataClient.tabularDataBySQL(
        sdk.organizationId,
        `SELECT component_name, count(*) AS n, avg((data->'readings'->>'temperature')::float8) AS mean
           FROM readings GROUP BY component_name ORDER BY component_name`,
      )) as Record<string, unknown>[];
      assert.deepEqual(grouped, [
        { component_name: 'motor', n: 1, mean: null },
        { component_name: 'thermo', n: 3, mean: (20.5 + 22 + 25.25) / 3 },
      ]);
      const [doc] = (await sdk.client.dataClient.tabularDataBySQL(
        sdk.organizationId,
        "SELECT * FROM readings WHERE component_name = 'motor'",
      )) as Record<string, unknown>[];
      assert.equal(doc?.organization_id, sdk.organizationId);
      assert.equal(doc?.method_name, 'Position');
      assert.deepEqual(doc?.data, { position: 145.7 });
      assert.deepEqual(doc?.tags, []);
      assert.ok(doc?.time_received instanceof Date);
      assert.equal(typeof doc?._id, 'object', 'the _id decodes as the SDK ObjectId');
      const averaged = (await sdk.client.dataClient.tabularDataBySQL(
        sdk.organizationId,
        "SELECT avg(data.readings.temperature) AS mean, max(data.readings.humidity) AS top FROM readings WHERE data.readings.label <> 'hot'",
      )) as Record<string, unknown>[];
      assert.deepEqual(averaged, [{ mean: 21.25, top: 61 }]);
    });

    test('only the caller organization is visible; a foreign organization ID is denied', async () => {
      const rows = (await sdk.client.dataClient.tabularDataBySQL(
        sdk.organizationId,
        'SELECT DISTINCT organization_id FROM readings',
      )) as Record<string, unknown>[];
      assert.deepEqual(rows, [{ organization_id: sdk.organizationId }]);
      await expectRpcError(sdk.client.dataClient.tabularDataBySQL(foreignOrg, 'SELECT * FROM readings'), [
        Code.PermissionDenied,
      ]);
    });

    test('errors: syntax with position, refused statement and function, unknown column, budgets', async () => {
      const syntax = await expectRpcError(
        sdk.client.dataClient.tabularDataBySQL(sdk.organizationId, 'SELECT * FROM FROM readings'),
        Code.InvalidArgument,
      );
      assert.match(syntax.rawMessage, /syntax error at or near "FROM" \(at character 15\)/);
      const write = await expectRpcError(
        sdk.client.dataClient.tabularDataBySQL(sdk.organizationId, 'DELETE FROM readings'),
        Code.InvalidArgument,
      );
      assert.match(write.rawMessage, /only SELECT statements are allowed \(got DELETE\)/);
      const sleep = await expectRpcError(
        sdk.client.dataClient.tabularDataBySQL(sdk.organizationId, 'SELECT pg_sleep(10)'),
        Code.InvalidArgument,
      );
      assert.match(sleep.rawMessage, /function pg_sleep is not allowed/);
      const unknown = await expectRpcError(
        sdk.client.dataClient.tabularDataBySQL(sdk.organizationId, 'SELECT nope FROM readings'),
        Code.InvalidArgument,
      );
      assert.match(unknown.rawMessage, /column "nope" does not exist \(at character 8\)/);
      const tooMany = await expectRpcError(
        sdk.client.dataClient.tabularDataBySQL(
          sdk.organizationId,
          'SELECT * FROM generate_series(1, 200000)',
        ),
        Code.ResourceExhausted,
      );
      assert.match(tooMany.rawMessage, /limit of 100000 rows/);
    });

    test('an operator key scoped to a location cannot run organization SQL', async () => {
      const scoped = await createScopedKey(sdk.testCloud.cloud, sdk.organizationId, {
        resourceType: 'location',
        resourceId: sdk.locationId,
      });
      const client = await sdk.clientFor(scoped.keyId, scoped.key);
      await expectRpcError(
        client.dataClient.tabularDataBySQL(sdk.organizationId, 'SELECT 1'),
        Code.PermissionDenied,
      );
    });

    test('database user: configure, connection details without the password', async () => {
      const before = await sdk.client.dataClient.getDatabaseConnection(sdk.organizationId);
      assert.match(before, /^127\.0\.0\.1(:\d+)?$/);
      await sdk.client.dataClient.configureDatabaseUser(sdk.organizationId, 'Password01!');
      await expectRpcError(
        sdk.client.dataClient.configureDatabaseUser(sdk.organizationId, 'short'),
        Code.InvalidArgument,
      );
    });
  });
}
