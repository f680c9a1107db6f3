import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { dataSyncPb } from '@mcloud/protocol';
import { createAuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  apiKeyClient,
  createTestDataset,
  createTestPart,
  type DataSyncClient,
  dataSyncClient,
  listBlobFiles,
  messages,
  type TestPart,
  tokenFor,
  ts,
  uploadMetadata,
  valueParameter,
} from './ingest-fixtures.ts';

let t: TestCloud;
let client: DataSyncClient;
let part: TestPart;

before(async () => {
  t = await startTestCloud();
  client = await apiKeyClient(t);
  part = await createTestPart(t, t.bootstrap.organization_id, t.bootstrap.location_id);
});
after(async () => {
  await t?.stop();
});

async function expectCode(promise: Promise<unknown>, code: Code, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConnectError, `expected ConnectError, got ${String(error)}`);
    assert.equal(error.code, code, `code of: ${error.message}`);
    assert.match(error.rawMessage, pattern);
    return true;
  });
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function binaryRow(binaryDataId: string) {
  const result = await t.cloud.deps.db.query('SELECT * FROM binary_data WHERE id = $1', [binaryDataId]);
  return result.rows[0];
}

function fileUploadRequests(
  metadata: dataSyncPb.UploadMetadata,
  content: Uint8Array,
  chunkBytes = 64 * 1024,
) {
  const requests: dataSyncPb.FileUploadRequest[] = [
    create(dataSyncPb.FileUploadRequestSchema, { uploadPacket: { case: 'metadata', value: metadata } }),
  ];
  for (let offset = 0; offset < content.length; offset += chunkBytes) {
    requests.push(
      create(dataSyncPb.FileUploadRequestSchema, {
        uploadPacket: {
          case: 'fileContents',
          value: { data: content.subarray(offset, offset + chunkBytes) },
        },
      }),
    );
  }
  return requests;
}

test('a binary capture is stored in the blob store with metadata, bounding boxes and datasets', async () => {
  const datasetId = await createTestDataset(t, part.organizationId, 'images');
  const image = randomBytes(50_000);
  const requested = Date.UTC(2025, 6, 1, 12, 0, 0);
  const response = await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, {
      type: dataSyncPb.DataType.BINARY_SENSOR,
      componentType: 'rdk:component:camera',
      componentName: 'cam',
      methodName: 'ReadImage',
      fileExtension: '.jpeg',
      tags: ['front', 'front', 'day'],
      datasetIds: [datasetId],
      methodParameters: { mime_type: valueParameter('image/jpeg') },
    }),
    sensorContents: [
      {
        metadata: {
          timeRequested: ts(requested),
          timeReceived: ts(requested + 20),
          annotations: {
            bboxes: [
              {
                label: 'cat',
                xMinNormalized: 0.1,
                yMinNormalized: 0.2,
                xMaxNormalized: 0.5,
                yMaxNormalized: 0.6,
                confidence: 0.9,
              },
              { label: 'dog', xMinNormalized: 0, yMinNormalized: 0, xMaxNormalized: 1, yMaxNormalized: 1 },
            ],
          },
        },
        data: { case: 'binary', value: image },
      },
    ],
  });
  assert.match(response.fileId, /^[0-9a-f]{24}$/);
  assert.equal(response.binaryDataId, `${part.organizationId}/${part.locationId}/${response.fileId}`);
  const row = await binaryRow(response.binaryDataId);
  assert.equal(row.organization_id, part.organizationId);
  assert.equal(row.robot_id, part.robotId);
  assert.equal(row.part_id, part.partId);
  assert.equal(row.file_ext, '.jpeg');
  assert.equal(row.mime_type, 'image/jpeg');
  assert.equal(row.component_name, 'cam');
  assert.deepEqual(row.tags, ['front', 'day']);
  assert.deepEqual(row.dataset_ids, [datasetId]);
  assert.deepEqual(row.method_parameters, { mime_type: 'image/jpeg' });
  assert.equal(row.captured_at.getTime(), requested);
  assert.equal(row.time_received.getTime(), requested + 20);
  assert.equal(Number(row.size_bytes), image.length);
  assert.equal(row.sha256, sha256(image));
  assert.equal(row.blob_key, response.binaryDataId);
  assert.deepEqual(Buffer.from(await t.cloud.deps.blobs.read(row.blob_key)), image);
  const boxes = await t.cloud.deps.db.query(
    'SELECT label, x_min, y_min, x_max, y_max, confidence, organization_id FROM bounding_boxes WHERE binary_id = $1 ORDER BY label',
    [response.binaryDataId],
  );
  assert.deepEqual(
    boxes.rows.map((box) => [box.label, box.x_min, box.y_min, box.x_max, box.y_max, box.confidence]),
    [
      ['cat', 0.1, 0.2, 0.5, 0.6, 0.9],
      ['dog', 0, 0, 1, 1, null],
    ],
  );
});

test('mime type and extension are derived from each other', async () => {
  const png = await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, { type: dataSyncPb.DataType.BINARY_SENSOR, mimeType: 'image/png' }),
    sensorContents: [
      { metadata: { timeRequested: ts(Date.now()) }, data: { case: 'binary', value: randomBytes(10) } },
    ],
  });
  const pngRow = await binaryRow(png.binaryDataId);
  assert.deepEqual([pngRow.file_ext, pngRow.mime_type], ['.png', 'image/png']);
  const pcd = await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, { type: dataSyncPb.DataType.BINARY_SENSOR }),
    sensorContents: [
      {
        metadata: { timeRequested: ts(Date.now()), mimeType: dataSyncPb.MimeType.APPLICATION_PCD },
        data: { case: 'binary', value: randomBytes(10) },
      },
    ],
  });
  const pcdRow = await binaryRow(pcd.binaryDataId);
  assert.deepEqual([pcdRow.file_ext, pcdRow.mime_type], ['.pcd', 'pointcloud/pcd']);
  const jpg = await client.dataCaptureUpload({
    metadata: uploadMetadata(part.partId, { type: dataSyncPb.DataType.BINARY_SENSOR, fileExtension: 'JPG' }),
    sensorContents: [{ metadata: {}, data: { case: 'binary', value: randomBytes(10) } }],
  });
  const jpgRow = await binaryRow(jpg.binaryDataId);
  assert.deepEqual([jpgRow.file_ext, jpgRow.mime_type], ['.JPG', 'image/jpeg']);
});

test('binary uploads need exactly one binary entry and existing datasets; failures store nothing', async () => {
  const before = (await listBlobFiles(t)).length;
  const binaryMetadata = uploadMetadata(part.partId, {
    type: dataSyncPb.DataType.BINARY_SENSOR,
    fileExtension: '.png',
  });
  await expectCode(
    client.dataCaptureUpload({
      metadata: binaryMetadata,
      sensorContents: [
        { metadata: {}, data: { case: 'binary', value: randomBytes(4) } },
        { metadata: {}, data: { case: 'binary', value: randomBytes(4) } },
      ],
    }),
    Code.InvalidArgument,
    /sensor_contents.*exactly one/,
  );
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, {
        type: dataSyncPb.DataType.BINARY_SENSOR,
        datasetIds: ['nope'],
      }),
      sensorContents: [{ metadata: {}, data: { case: 'binary', value: randomBytes(4) } }],
    }),
    Code.InvalidArgument,
    /dataset_ids\[0\].*"nope"/,
  );
  await expectCode(
    client.dataCaptureUpload({
      metadata: binaryMetadata,
      sensorContents: [
        {
          metadata: {
            annotations: {
              bboxes: [{ label: 'x', xMinNormalized: 0.5, xMaxNormalized: 0.4, yMaxNormalized: 1 }],
            },
          },
          data: { case: 'binary', value: randomBytes(4) },
        },
      ],
    }),
    Code.InvalidArgument,
    /bboxes\[0\]/,
  );
  // The row insert fails after the blob was written (jsonb refuses NUL): the blob is deleted again.
  await expectCode(
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, {
        type: dataSyncPb.DataType.BINARY_SENSOR,
        methodParameters: { bad: valueParameter('a\u0000b') },
      }),
      sensorContents: [{ metadata: {}, data: { case: 'binary', value: randomBytes(4) } }],
    }),
    Code.InvalidArgument,
    /method_parameters/,
  );
  assert.equal((await listBlobFiles(t)).length, before);
});

test('FileUpload streams a multi-MB file in 64 KiB chunks; a retry stores it once', async () => {
  const content = randomBytes(5 * 1024 * 1024 + 123);
  const metadata = uploadMetadata(part.partId, {
    type: dataSyncPb.DataType.FILE,
    componentType: '',
    componentName: '',
    methodName: '',
    fileName: '/home/pi/logs/run-1.tar.gz',
  });
  const response = await client.fileUpload(messages(fileUploadRequests(metadata, content)));
  assert.match(response.fileId, /^[0-9a-f]{24}$/);
  assert.equal(response.binaryDataId, `${part.organizationId}/${part.locationId}/${response.fileId}`);
  const row = await binaryRow(response.binaryDataId);
  assert.equal(row.file_name, '/home/pi/logs/run-1.tar.gz');
  assert.equal(row.file_ext, '.gz');
  assert.equal(row.mime_type, 'application/gzip');
  assert.equal(Number(row.size_bytes), content.length);
  assert.equal(row.sha256, sha256(content));
  const stored = await t.cloud.deps.blobs.read(row.blob_key);
  assert.equal(sha256(stored), sha256(content));

  const blobsBefore = (await listBlobFiles(t)).length;
  const retry = await client.fileUpload(messages(fileUploadRequests(metadata, content, 100_000)));
  assert.equal(retry.binaryDataId, response.binaryDataId);
  assert.equal(retry.fileId, response.fileId);
  const [racingA, racingB] = await Promise.all([
    client.fileUpload(messages(fileUploadRequests(metadata, content))),
    client.fileUpload(messages(fileUploadRequests(metadata, content))),
  ]);
  assert.equal(racingA.binaryDataId, response.binaryDataId);
  assert.equal(racingB.binaryDataId, response.binaryDataId);
  assert.equal((await listBlobFiles(t)).length, blobsBefore);
  const rows = await t.cloud.deps.db.query(
    "SELECT count(*)::int AS n FROM binary_data WHERE file_name = '/home/pi/logs/run-1.tar.gz'",
  );
  assert.equal(rows.rows[0].n, 1);
});

test('FileUpload without metadata first, or with metadata twice, is invalid', async () => {
  await expectCode(
    client.fileUpload(
      messages([
        create(dataSyncPb.FileUploadRequestSchema, {
          uploadPacket: { case: 'fileContents', value: { data: new Uint8Array([1]) } },
        }),
      ]),
    ),
    Code.InvalidArgument,
    /first message/,
  );
  await expectCode(client.fileUpload(messages([])), Code.InvalidArgument, /first message/);
  const metadata = uploadMetadata(part.partId, { type: dataSyncPb.DataType.FILE, fileName: 'twice.txt' });
  const twice = fileUploadRequests(metadata, randomBytes(10));
  twice.push(
    create(dataSyncPb.FileUploadRequestSchema, { uploadPacket: { case: 'metadata', value: metadata } }),
  );
  const before = (await listBlobFiles(t)).length;
  await expectCode(client.fileUpload(messages(twice)), Code.InvalidArgument, /only the first message/);
  assert.equal((await listBlobFiles(t)).length, before);
});

test('StreamingDataCaptureUpload stores a large capture with the sensor metadata times', async () => {
  const video = randomBytes(2 * 1024 * 1024 + 7);
  const requested = Date.UTC(2025, 7, 2, 3, 4, 5);
  const requests: dataSyncPb.StreamingDataCaptureUploadRequest[] = [
    create(dataSyncPb.StreamingDataCaptureUploadRequestSchema, {
      uploadPacket: {
        case: 'metadata',
        value: {
          uploadMetadata: uploadMetadata(part.partId, {
            type: dataSyncPb.DataType.BINARY_SENSOR,
            componentType: 'rdk:component:camera',
            componentName: 'cam',
            methodName: 'GetImages',
            fileExtension: '.mp4',
          }),
          sensorMetadata: { timeRequested: ts(requested), timeReceived: ts(requested + 1) },
        },
      },
    }),
  ];
  for (let offset = 0; offset < video.length; offset += 64 * 1024) {
    requests.push(
      create(dataSyncPb.StreamingDataCaptureUploadRequestSchema, {
        uploadPacket: { case: 'data', value: video.subarray(offset, offset + 64 * 1024) },
      }),
    );
  }
  const response = await client.streamingDataCaptureUpload(messages(requests));
  const row = await binaryRow(response.binaryDataId);
  assert.equal(response.binaryDataId.split('/')[2], response.fileId);
  assert.equal(row.mime_type, 'video/mp4');
  assert.equal(row.captured_at.getTime(), requested);
  assert.equal(row.time_requested.getTime(), requested);
  assert.equal(Number(row.size_bytes), video.length);
  assert.equal(sha256(await t.cloud.deps.blobs.read(row.blob_key)), sha256(video));

  await expectCode(
    client.streamingDataCaptureUpload(
      messages([
        create(dataSyncPb.StreamingDataCaptureUploadRequestSchema, {
          uploadPacket: { case: 'data', value: video.subarray(0, 10) },
        }),
      ]),
    ),
    Code.InvalidArgument,
    /first message/,
  );
});

test('machine credentials upload files for their own part only', async () => {
  const sibling = await createTestPart(t, t.bootstrap.organization_id, t.bootstrap.location_id);
  const machine = dataSyncClient(
    t.url,
    await tokenFor(t.url, { type: 'robot-secret', entity: part.partId, payload: part.secret }),
  );
  const ok = await machine.fileUpload(
    messages(
      fileUploadRequests(
        uploadMetadata(part.partId, { type: dataSyncPb.DataType.FILE, fileName: 'a.txt' }),
        randomBytes(100),
      ),
    ),
  );
  assert.equal((await binaryRow(ok.binaryDataId)).mime_type, 'text/plain');
  const before = (await listBlobFiles(t)).length;
  await expectCode(
    machine.fileUpload(
      messages(
        fileUploadRequests(
          uploadMetadata(sibling.partId, { type: dataSyncPb.DataType.FILE }),
          randomBytes(100),
        ),
      ),
    ),
    Code.NotFound,
    /part_id/,
  );
  assert.equal((await listBlobFiles(t)).length, before);
});

test('classifications in the upload annotations are stored and returned in BinaryMetadata.annotations', async () => {
  const owner = await createAuthedClients(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key });
  const upload = (classifications: { label: string; confidence?: number }[], componentName: string) =>
    client.dataCaptureUpload({
      metadata: uploadMetadata(part.partId, {
        type: dataSyncPb.DataType.BINARY_SENSOR,
        componentName,
        mimeType: 'image/png',
      }),
      sensorContents: [
        {
          metadata: {
            timeRequested: ts(Date.UTC(2025, 6, 2)),
            annotations: {
              classifications,
              bboxes: [{ label: 'dog', xMaxNormalized: 1, yMaxNormalized: 1 }],
            },
          },
          data: { case: 'binary', value: randomBytes(100) },
        },
      ],
    });
  const response = await upload([{ label: 'cat', confidence: 0.75 }, { label: 'indoor' }], 'classified-cam');
  const { data } = await owner.data.binaryDataByIDs({ binaryDataIds: [response.binaryDataId] });
  const annotations = data[0]?.metadata?.annotations;
  assert.deepEqual(annotations?.classifications.map((c) => [c.label, c.confidence]).sort(), [
    ['cat', 0.75],
    ['indoor', undefined],
  ]);
  assert.ok(annotations?.classifications.every((c) => c.id !== ''));
  assert.deepEqual(
    annotations?.bboxes.map((box) => box.label),
    ['dog'],
  );
  const page = await owner.data.binaryDataByFilter({
    dataRequest: { filter: { componentName: 'classified-cam' }, limit: 10n },
  });
  assert.deepEqual(page.data[0]?.metadata?.annotations?.classifications.map((c) => c.label).sort(), [
    'cat',
    'indoor',
  ]);

  await expectCode(
    upload([{ label: 'cat', confidence: 1.5 }], 'bad-classified-cam'),
    Code.InvalidArgument,
    /annotations\.classifications\[0\]\.confidence.*between 0 and 1/,
  );
  await expectCode(
    upload([{ label: ' ' }], 'bad-classified-cam'),
    Code.InvalidArgument,
    /annotations\.classifications\[0\]\.label.*required/,
  );
  const stored = await t.cloud.deps.db.query(
    `SELECT count(*)::int AS n FROM binary_data WHERE component_name = 'bad-classified-cam'`,
  );
  assert.equal(stored.rows[0].n, 0, 'a refused upload stores nothing');
});
