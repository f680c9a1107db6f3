import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Code, expectRpcError, sdkTransportKinds } from '@mcloud/sdk-testkit';
import { serialize } from 'bson';
import { createAuthedClients } from '../support/connect-clients.ts';
import { createOrganization, createPart, seedReadings } from '../support/seed-data.ts';
import { type SdkCloud, startSdkCloud } from './e2e-support.ts';

// TabularDataByMQL and saved queries through the real @viamrobotics/sdk: the SDK encodes the stages
// with its own BSON encoder and decodes the results with its own decoder (bsonfy).

const base = Date.parse('2025-03-10T00:00:00Z');
const minute = 60_000;

for (const transport of sdkTransportKinds) {
  describe(`MQL over ${transport}`, () => {
    let sdk: SdkCloud;
    let foreignOrg: string;

    before(async () => {
      sdk = await startSdkCloud(transport);
      const cloud = sdk.testCloud.cloud;
      const part = await createPart(
        cloud,
        { organizationId: sdk.organizationId, locationId: sdk.locationId },
        { robotName: 'rover' },
      );
      await seedReadings(cloud, part, { componentName: 'thermo', tags: ['lab'] }, [
        { capturedAtMs: base, data: { readings: { temperature: 20.5, humidity: 61 } } },
        { capturedAtMs: base + minute, data: { readings: { temperature: 22, humidity: 60 } } },
        { capturedAtMs: base + 61 * minute, data: { readings: { temperature: 25.25, humidity: 58 } } },
      ]);
      await seedReadings(
        cloud,
        part,
        {
          componentType: 'rdk:service:vision',
          componentName: 'detector',
          methodName: 'CaptureAllFromCamera',
        },
        [
          {
            capturedAtMs: base + 2 * minute,
            data: {
              detections: [
                { class_name: 'cat', confidence: 0.9 },
                { class_name: 'dog', confidence: 0.4 },
              ],
            },
          },
        ],
      );
      const foreign = await createOrganization(cloud, 'foreign');
      foreignOrg = foreign.organizationId;
      const foreignPart = await createPart(
        cloud,
        { organizationId: foreignOrg, locationId: foreign.locationId },
        { robotName: 'spy' },
      );
      await seedReadings(cloud, foreignPart, { componentName: 'thermo' }, [
        { capturedAtMs: base, data: { readings: { temperature: 99 } } },
      ]);
    });

    after(async () => {
      await sdk?.stop();
    });

    const query = (stages: Record<string, unknown>[] | Uint8Array[], prefix?: string) =>
      sdk.client.dataClient.tabularDataByMQL(
        sdk.organizationId,
        stages as never,
        false,
        undefined,
        prefix,
      ) as Promise<Record<string, unknown>[]>;

    test('$match on a date range + $group + $sort, the reference docs style, decoded by the SDK', async () => {
      const rows = await query([
        {
          $match: {
            component_name: 'thermo',
            time_received: { $gte: new Date(base), $lt: new Date(base + 2 * 3_600_000) },
          },
        },
        {
          $group: {
            _id: { $dateToString: { format: '%Y-%m-%d %H:00', date: '$time_received' } },
            mean: { $avg: '$data.readings.temperature' },
            top: { $max: '$data.readings.humidity' },
            n: { $sum: 1 },
            last: { $max: '$time_received' },
          },
        },
        { $sort: { _id: 1 } },
      ]);
      assert.deepEqual(rows, [
        { _id: '2025-03-10 00:00', mean: 21.25, top: 61, n: 2, last: new Date(base + minute) },
        { _id: '2025-03-10 01:00', mean: 25.25, top: 58, n: 1, last: new Date(base + 61 * minute) },
      ]);
    });

    test('whole documents carry the §3.2 fields with BSON types; $unwind over detections', async () => {
      const [doc] = await query([{ $match: { component_name: 'detector' } }, { $limit: 1 }]);
      assert.equal(doc?.organization_id, sdk.organizationId);
      assert.equal(doc?.component_type, 'rdk:service:vision');
      assert.equal(doc?.method_name, 'CaptureAllFromCamera');
      assert.ok(doc?.time_received instanceof Date);
      assert.equal(typeof doc?._id, 'object', 'the _id decodes as the SDK ObjectId');
      const unwound = await query([
        { $unwind: '$data.detections' },
        { $match: { 'data.detections.confidence': { $gt: 0.5 } } },
        {
          $project: {
            _id: 0,
            label: '$data.detections.class_name',
            confidence: '$data.detections.confidence',
          },
        },
      ]);
      assert.deepEqual(unwound, [{ label: 'cat', confidence: 0.9 }]);
    });

    test('raw BSON stages (deprecated form) and the organization scope injected before the first stage', async () => {
      const rows = await query([serialize({ $group: { _id: '$organization_id', n: { $sum: 1 } } })]);
      assert.deepEqual(rows, [{ _id: sdk.organizationId, n: 4 }]);
      const foreign = await query([{ $match: { organization_id: foreignOrg } }]);
      assert.deepEqual(foreign, []);
      await expectRpcError(sdk.client.dataClient.tabularDataByMQL(foreignOrg, [{ $match: {} }]), [
        Code.PermissionDenied,
      ]);
    });

    test('refused and unsupported stages, malformed BSON name the stage index', async () => {
      const lookup = await expectRpcError(
        query([{ $match: {} }, { $lookup: { from: 'readings', as: 'x' } }]),
        Code.InvalidArgument,
      );
      assert.match(lookup.rawMessage, /mql_binary\[1\] \(\$lookup\): stage \$lookup is not allowed/);
      const unknown = await expectRpcError(query([{ $densify: {} }]), Code.InvalidArgument);
      assert.match(unknown.rawMessage, /mql_binary\[0\] \(\$densify\): unsupported stage \$densify/);
      const operator = await expectRpcError(query([{ $project: { x: { $sin: 1 } } }]), Code.InvalidArgument);
      assert.match(
        operator.rawMessage,
        /mql_binary\[0\] \(\$project\): unsupported expression operator \$sin/,
      );
      const malformed = await expectRpcError(
        query([serialize({ $match: {} }), new Uint8Array([5, 0, 0, 0, 1, 2])]),
        Code.InvalidArgument,
      );
      assert.match(malformed.rawMessage, /mql_binary\[1\]: is not a valid BSON document/);
    });

    test('saved queries (raw client; the SDK does not wrap them) run by query_prefix_name', async () => {
      const { bootstrap, url } = sdk.testCloud;
      const data = (await createAuthedClients(url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key }))
        .data;
      const { id } = await data.createSavedQuery({
        organizationId: sdk.organizationId,
        name: 'thermo-only',
        mqlBinary: [serialize({ $match: { component_name: 'thermo' } })],
      });
      const { savedQuery } = await data.getSavedQuery({ id });
      assert.equal(savedQuery?.name, 'thermo-only');
      assert.equal(savedQuery?.organizationId, sdk.organizationId);
      assert.deepEqual(
        savedQuery?.mqlBinary.map((stage) => Buffer.from(stage)),
        [serialize({ $match: { component_name: 'thermo' } })],
        'the stages come back as the BSON bytes that were sent',
      );
      assert.deepEqual(await query([{ $count: 'n' }], 'thermo-only'), [{ n: 3 }]);
      await data.updateSavedQuery({
        id,
        name: 'thermo-early',
        mqlBinary: [
          serialize({
            $match: { component_name: 'thermo', time_received: { $lt: new Date(base + 30 * minute) } },
          }),
        ],
      });
      assert.deepEqual(await query([{ $count: 'n' }], 'thermo-early'), [{ n: 2 }]);
      const listed = await data.listSavedQueries({ organizationId: sdk.organizationId, limit: 10n });
      assert.deepEqual(
        listed.queries.map((entry) => entry.name),
        ['thermo-early'],
      );
      const missing = await expectRpcError(query([{ $count: 'n' }], 'thermo-only'), Code.NotFound);
      assert.match(missing.rawMessage, /saved query "thermo-only" not found/);
      await assert.rejects(
        data.createSavedQuery({
          organizationId: sdk.organizationId,
          name: 'bad',
          mqlBinary: [serialize({ $out: 'elsewhere' })],
        }),
        /mql_binary\[0\] \(\$out\): stage \$out is not allowed/,
      );
      await assert.rejects(
        data.createSavedQuery({
          organizationId: sdk.organizationId,
          name: 'thermo-early',
          mqlBinary: [serialize({ $match: {} })],
        }),
        /already exists/,
      );
      await data.deleteSavedQuery({ id });
      await assert.rejects(data.getSavedQuery({ id }), /not found/);
    });
  });
}
