import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createClient } from '@connectrpc/connect';
import { dataPipelinesPb } from '@mcloud/protocol';
import { Code, expectRpcError } from '@mcloud/sdk-testkit';
import { serialize } from 'bson';
import type { CloudConfig } from '../../src/config/cloud-config.ts';
import { indexKeysOf, withIndexHint } from '../../src/domain/data/indexes/index-match.ts';
import { compilePipeline } from '../../src/domain/data/mql/mql-compiler.ts';
import { decodeStage } from '../../src/domain/data/mql/mql-values.ts';
import { pipelineSinkSource } from '../../src/domain/pipelines/pipeline-sink-source.ts';
import { createAuthedClients } from '../support/connect-clients.ts';
import { createOrganization } from '../support/seed-data.ts';
import { eventually, type SdkCloud, startSdkCloud } from './e2e-support.ts';
import { customPgIndexes, explainAs, indexScans } from './index-test-support.ts';

// Custom indexes on a pipeline's sink (IndexableCollection PIPELINE_SINK + pipeline_name): expression
// indexes on the sink documents, partial on the pipeline, used by PIPELINE_SINK MQL, listed back under the
// pipeline's (current) name, dropped with the pipeline. Sink documents are written straight into the table
// (the runner's output format, migration 0010), so the test controls them exactly.

const PIPELINE_SINK = 2 as never;
const sinkSource = (id: string) => ({ type: 3, pipelineId: id }) as never;

describe('pipeline sink indexes', () => {
  let sdk: SdkCloud;
  let pipelineId: string;
  let otherPipelineId: string;
  let rename: (id: string, name: string) => Promise<unknown>;

  const stages = [{ $match: { component_name: 'x' } }];
  const spec = (keys: Record<string, unknown>, options?: Record<string, unknown>) =>
    ({ keys, ...(options ? { options } : {}) }) as never;

  async function writeSink(pipeline: string, docs: Record<string, unknown>[]): Promise<void> {
    await sdk.testCloud.cloud.deps.db.query(
      `INSERT INTO pipeline_sink (organization_id, pipeline_id, run_id, doc)
       SELECT $1, $2, $3, d FROM unnest($4::jsonb[]) AS u(d)`,
      [sdk.organizationId, pipeline, randomUUID(), docs.map((doc) => JSON.stringify(doc))],
    );
  }

  before(async () => {
    // No scheduler passes: the sink holds exactly what the test writes.
    const configure = (config: CloudConfig): CloudConfig => ({
      ...config,
      pipelines: { ...config.pipelines, schedulerIntervalMs: 0 },
    });
    sdk = await startSdkCloud('grpc', { configure });
    const data = sdk.client.dataClient;
    pipelineId = await data.createDataPipeline(sdk.organizationId, 'summary', stages, '0 * * * *', false);
    otherPipelineId = await data.createDataPipeline(sdk.organizationId, 'other', stages, '0 * * * *', false);
    const { bootstrap, url } = sdk.testCloud;
    const clients = await createAuthedClients(url, { keyId: bootstrap.api_key_id, key: bootstrap.api_key });
    const pipelines = createClient(dataPipelinesPb.DataPipelinesService, clients.transport);
    rename = (id, name) => pipelines.renameDataPipeline({ id, name });
    const run = { id: randomUUID(), interval: { start: { $date: 0 }, end: { $date: 3_600_000 } } };
    await writeSink(
      pipelineId,
      Array.from({ length: 20_000 }, (_, i) => ({
        device: `d${i % 50}`,
        n: i,
        _viam_pipeline_run: { ...run, organization_id: sdk.organizationId },
      })),
    );
    await writeSink(pipelineId, [{ device: 'arrays', n: [12345, 1] }]);
    await writeSink(otherPipelineId, [{ device: 'other', n: 12345 }]);
  });

  after(async () => {
    await sdk?.stop();
  });

  test('CreateIndex on a sink builds an index partial on that pipeline; PIPELINE_SINK MQL $match uses it', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    const data = sdk.client.dataClient;
    await data.createIndex(
      sdk.organizationId,
      PIPELINE_SINK,
      spec({ n: 1, device: -1 }, { name: 'by_n' }),
      'summary',
    );
    const listed = await data.listIndexes(sdk.organizationId, PIPELINE_SINK, 'summary');
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.indexName, 'by_n');
    assert.equal(listed[0]?.pipelineName, 'summary');
    assert.equal(listed[0]?.collectionType, PIPELINE_SINK);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(listed[0]?.indexSpec[0])), {
      key: { n: 1, device: -1 },
      options: { name: 'by_n' },
    });
    assert.deepEqual(await data.listIndexes(sdk.organizationId, PIPELINE_SINK, 'other'), []);
    // The same name on another pipeline is another index.
    await data.createIndex(sdk.organizationId, PIPELINE_SINK, spec({ n: 1 }, { name: 'by_n' }), 'other');
    const pgIndexes = await customPgIndexes(db, 'pipeline_sink');
    assert.equal(pgIndexes.length, 2);
    const ours = pgIndexes.find((index) => index.definition.includes(pipelineId));
    assert.match(
      ours?.definition ?? '',
      /\(sensordata\.doc_index_key\(doc, ARRAY\['n'::text\]\), sensordata\.doc_index_key\(doc, ARRAY\['device'::text\]\) DESC\) WHERE \(pipeline_id = '[0-9a-f-]+'::uuid\)/,
    );
    await db.query('ANALYZE pipeline_sink');

    const query = [{ $match: { n: 12345 } }, { $project: { _id: 0, device: 1, n: 1 } }];
    const decoded = query.map((stage, index) => decodeStage(serialize(stage), index));
    const keys = await indexKeysOf(db, sdk.organizationId, { type: 'pipeline-sink', pipelineId });
    const { sql } = compilePipeline(decoded, withIndexHint(pipelineSinkSource(pipelineId), decoded, keys));
    const plan = await explainAs(db, sdk.organizationId, sql);
    assert.match(plan, new RegExp(`Index Scan (using|on) ${ours?.name}`), plan);
    const before = await indexScans(db, ours?.name as string);
    const rows = (await data.tabularDataByMQL(
      sdk.organizationId,
      query as never,
      false,
      sinkSource(pipelineId),
    )) as Record<string, unknown>[];
    assert.deepEqual(rows.map((row) => JSON.stringify(row)).sort(), [
      '{"device":"arrays","n":[12345,1]}',
      '{"device":"d45","n":12345}',
    ]);
    // An idle backend flushes its statistics within 10 s (PGSTAT_IDLE_INTERVAL).
    await eventually(async () => assert.ok((await indexScans(db, ours?.name as string)) > before), 15_000);
  });

  test('a renamed pipeline keeps its indexes; unknown, missing and foreign pipelines are refused', async () => {
    const data = sdk.client.dataClient;
    await rename(pipelineId, 'renamed');
    const listed = await data.listIndexes(sdk.organizationId, PIPELINE_SINK, 'renamed');
    assert.deepEqual(
      listed.map((index: { indexName: string; pipelineName?: string }) => [
        index.indexName,
        index.pipelineName,
      ]),
      [['by_n', 'renamed']],
    );
    await expectRpcError(data.listIndexes(sdk.organizationId, PIPELINE_SINK, 'summary'), Code.NotFound);
    const missing = await expectRpcError(
      data.listIndexes(sdk.organizationId, PIPELINE_SINK),
      Code.InvalidArgument,
    );
    assert.match(missing.rawMessage, /pipeline_name: is required/);
    const foreign = await createOrganization(sdk.testCloud.cloud, 'foreign');
    const foreignClient = await sdk.clientFor(foreign.keyId, foreign.key);
    // Another organization cannot reach our pipeline by name, nor build on it.
    await expectRpcError(
      foreignClient.dataClient.listIndexes(foreign.organizationId, PIPELINE_SINK, 'renamed'),
      Code.NotFound,
    );
    await expectRpcError(
      foreignClient.dataClient.createIndex(foreign.organizationId, PIPELINE_SINK, spec({ n: 1 }), 'renamed'),
      Code.NotFound,
    );
    await expectRpcError(
      foreignClient.dataClient.listIndexes(sdk.organizationId, PIPELINE_SINK, 'renamed'),
      Code.PermissionDenied,
    );
    // Sink documents may be indexed on any path; malformed specs still name the field.
    const bad = await expectRpcError(
      data.createIndex(sdk.organizationId, PIPELINE_SINK, spec({ 'a.$b': 1 }), 'renamed'),
      Code.InvalidArgument,
    );
    assert.match(bad.rawMessage, /^index_spec\.keys\.a\.\$b: a path needs/);
  });

  test('deleting a pipeline drops its sink indexes; DeleteIndex on a sink drops one', async () => {
    const db = sdk.testCloud.cloud.deps.db;
    const data = sdk.client.dataClient;
    await data.deleteDataPipeline(pipelineId);
    const left = await customPgIndexes(db, 'pipeline_sink');
    assert.equal(left.length, 1);
    assert.ok(left[0]?.definition.includes(otherPipelineId));
    const records = await db.query('SELECT pipeline_name FROM custom_indexes WHERE organization_id = $1', [
      sdk.organizationId,
    ]);
    assert.deepEqual(records.rows, [{ pipeline_name: otherPipelineId }]);
    await data.deleteIndex(sdk.organizationId, PIPELINE_SINK, 'by_n', 'other');
    assert.deepEqual(await data.listIndexes(sdk.organizationId, PIPELINE_SINK, 'other'), []);
    assert.equal((await customPgIndexes(db, 'pipeline_sink')).length, 0);
  });
});
