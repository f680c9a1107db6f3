import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createClient } from '@connectrpc/connect';
import { dataPipelinesPb } from '@mcloud/protocol';
import { Code, expectRpcError } from '@mcloud/sdk-testkit';
import { createAuthedClients } from '../support/connect-clients.ts';
import { createOrganization } from '../support/seed-data.ts';
import { type SdkCloud, startSdkCloud } from './e2e-support.ts';

// DataPipelinesService through the real @viamrobotics/sdk dataClient (create, get, list, runs, delete)
// and a Connect client for the RPCs the TS SDK does not wrap (rename, enable, disable).

describe('data pipelines over grpc-web', () => {
  let sdk: SdkCloud;
  let pipelines: ReturnType<typeof createClient<typeof dataPipelinesPb.DataPipelinesService>>;
  let foreignOrg: { organizationId: string; keyId: string; key: string };

  before(async () => {
    sdk = await startSdkCloud('grpc-web');
    const { bootstrap, url } = sdk.testCloud;
    const clients = await createAuthedClients(url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key });
    pipelines = createClient(dataPipelinesPb.DataPipelinesService, clients.transport);
    foreignOrg = await createOrganization(sdk.testCloud.cloud, 'foreign');
  });

  after(async () => {
    await sdk?.stop();
  });

  const stages = [{ $match: { component_name: 'thermo' } }, { $group: { _id: '$part_id', n: { $sum: 1 } } }];

  test('create, get, list, rename, disable/enable, delete', async () => {
    const data = sdk.client.dataClient;
    const id = await data.createDataPipeline(sdk.organizationId, 'hourly-count', stages, '0 * * * *', false);
    assert.match(id, /^[0-9a-f-]{36}$/);
    const got = await data.getDataPipeline(id);
    assert.equal(got?.name, 'hourly-count');
    assert.equal(got?.organizationId, sdk.organizationId);
    assert.equal(got?.schedule, '0 * * * *');
    assert.equal(got?.enabled, true);
    assert.equal(got?.mqlBinary.length, 2);
    assert.ok(got?.createdOn);
    const listed = await data.listDataPipelines(sdk.organizationId);
    assert.deepEqual(
      listed.map((p: { id: string }) => p.id),
      [id],
    );

    await pipelines.renameDataPipeline({ id, name: 'renamed' });
    await pipelines.disableDataPipeline({ id });
    let again = await data.getDataPipeline(id);
    assert.equal(again?.name, 'renamed');
    assert.equal(again?.enabled, false);
    await pipelines.enableDataPipeline({ id });
    again = await data.getDataPipeline(id);
    assert.equal(again?.enabled, true);

    const page = await data.listDataPipelineRuns(id);
    assert.deepEqual(page.runs, []);

    await data.deleteDataPipeline(id);
    assert.equal(await data.getDataPipeline(id), null);
    await expectRpcError(data.deleteDataPipeline(id), Code.NotFound);
  });

  test('names are unique per organization; bad input names the field', async () => {
    const data = sdk.client.dataClient;
    await data.createDataPipeline(sdk.organizationId, 'dup', stages, '*/5 * * * *', false);
    const dup = await expectRpcError(
      data.createDataPipeline(sdk.organizationId, 'dup', stages, '*/5 * * * *', false),
      Code.AlreadyExists,
    );
    assert.match(dup.rawMessage, /name: .*"dup"/);
    // Unique per organization: another organization may use the name; renaming onto a taken name is refused.
    const other = await sdk.clientFor(foreignOrg.keyId, foreignOrg.key);
    const theirs = await other.dataClient.createDataPipeline(
      foreignOrg.organizationId,
      'dup',
      stages,
      '*/5 * * * *',
      false,
    );
    assert.equal((await other.dataClient.getDataPipeline(theirs))?.name, 'dup');
    await other.dataClient.deleteDataPipeline(theirs);
    const second = await data.createDataPipeline(sdk.organizationId, 'dup-2', stages, '*/5 * * * *', false);
    const renamed = await expectRpcError(
      pipelines.renameDataPipeline({ id: second, name: 'dup' }),
      Code.AlreadyExists,
    );
    assert.match(renamed.rawMessage, /name: .*"dup"/);
    await data.deleteDataPipeline(second);
    const cron = await expectRpcError(
      data.createDataPipeline(sdk.organizationId, 'x', stages, '0 * * * * *', false),
      Code.InvalidArgument,
    );
    assert.match(cron.rawMessage, /schedule: must have exactly 5 fields/);
    const stage = await expectRpcError(
      data.createDataPipeline(
        sdk.organizationId,
        'x',
        [{ $match: {} }, { $out: 'elsewhere' }],
        '0 * * * *',
        false,
      ),
      Code.InvalidArgument,
    );
    assert.match(stage.rawMessage, /mql_binary\[1\]/);
    const empty = await expectRpcError(
      data.createDataPipeline(sdk.organizationId, 'x', [], '0 * * * *', false),
      Code.InvalidArgument,
    );
    assert.match(empty.rawMessage, /mql_binary: must contain at least one stage/);
    const sink = await expectRpcError(
      pipelines.createDataPipeline({
        organizationId: sdk.organizationId,
        name: 'x',
        mqlBinary: [],
        schedule: '0 * * * *',
        dataSourceType: 3,
      }),
      Code.InvalidArgument,
    );
    assert.match(sink.rawMessage, /data_source_type/);
    const token = await expectRpcError(
      pipelines.listDataPipelineRuns({
        id: (await data.listDataPipelines(sdk.organizationId))[0]?.id ?? '',
        pageToken: 'nope',
      }),
      Code.InvalidArgument,
    );
    assert.match(token.rawMessage, /page_token/);
  });

  test('another organization cannot see, list or change the pipeline', async () => {
    const data = sdk.client.dataClient;
    const id = await data.createDataPipeline(sdk.organizationId, 'private', stages, '0 * * * *', false);
    const other = await sdk.clientFor(foreignOrg.keyId, foreignOrg.key);
    assert.equal(await other.dataClient.getDataPipeline(id), null);
    await expectRpcError(other.dataClient.listDataPipelines(sdk.organizationId), Code.PermissionDenied);
    assert.deepEqual(await other.dataClient.listDataPipelines(foreignOrg.organizationId), []);
    await expectRpcError(other.dataClient.deleteDataPipeline(id), Code.NotFound);
    await expectRpcError(other.dataClient.listDataPipelineRuns(id), Code.NotFound);
    assert.equal((await data.getDataPipeline(id))?.name, 'private');
  });
});
