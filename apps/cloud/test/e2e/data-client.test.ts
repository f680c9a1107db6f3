import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Code,
  expectRpcError,
  sdkDatasetRpcs,
  sdkTransportKinds,
  streamingDataCaptureUpload,
} from '@mcloud/sdk-testkit';
import { dataApi, type ViamClient } from '@viamrobotics/sdk';
import {
  createMachine,
  fakeJpeg,
  type Machine,
  plainBytes,
  randomId,
  type SdkCloud,
  startSdkCloud,
} from './e2e-support.ts';

// SDK return types reach us as `any` (see e2e-support.ts); these are the shapes the tests read.
interface CaptureMetadata {
  organizationId: string;
  locationId: string;
  robotId: string;
  partId: string;
  componentType: string;
  componentName: string;
  methodName: string;
  tags: string[];
  mimeType: string;
}
interface BoundingBox {
  id: string;
  label: string;
  xMinNormalized: number;
  yMinNormalized: number;
  xMaxNormalized: number;
  yMaxNormalized: number;
  confidence?: number;
}
interface BinaryData {
  binary: Uint8Array;
  metadata?: {
    binaryDataId: string;
    captureMetadata?: CaptureMetadata;
    fileName: string;
    fileExt: string;
    datasetIds: string[];
    annotations?: { bboxes: BoundingBox[] };
    timeRequested?: { toDate(): Date };
  };
}
interface TabularData {
  data?: unknown;
  metadata?: CaptureMetadata;
  timeRequested?: Date;
}
interface Page<T> {
  data: T[];
  count: bigint;
  last: string;
}
interface Dataset {
  id: string;
  name: string;
  organizationId: string;
  created?: Date;
}

const sensorType = 'rdk:component:sensor';
const cameraType = 'rdk:component:camera';

/** DataService, DataSyncService and DatasetService through the real SDK `DataClient`, once per transport. */
for (const transport of sdkTransportKinds) {
  describe(`DataClient over ${transport}`, { timeout: 120_000 }, () => {
    let cloud: SdkCloud;
    let data: ViamClient['dataClient'];
    let machine: Machine;
    const base = Date.now() - 60 * 60 * 1000;
    const at = (second: number) => new Date(base + second * 1000);
    const readings = [0, 1, 2, 3, 4].map((i) => ({ readings: { value: i, label: `r${i}` } }));
    const images = [fakeJpeg(1500, 1), fakeJpeg(2500, 2), fakeJpeg(3500, 3)];
    const imageIds: string[] = [];
    let fileId = '';
    let streamedId = '';
    const streamed = fakeJpeg(300_000, 9);
    const partFilter = () => new dataApi.Filter({ partId: machine.partId });
    const cameraFilter = () => new dataApi.Filter({ partId: machine.partId, componentName: 'cam-1' });

    before(async () => {
      cloud = await startSdkCloud(transport);
      data = cloud.client.dataClient;
      machine = await createMachine(cloud, cloud.locationId, 'e2e-data-rover');
    });
    after(async () => {
      await cloud?.stop();
    });

    test('getLatestTabularData is null before anything was captured', async () => {
      assert.equal(await data.getLatestTabularData(machine.partId, 'sensor-1', sensorType, 'Readings'), null);
    });

    test('tabularDataCaptureUpload stores readings and returns a file id', async () => {
      const id: string = await data.tabularDataCaptureUpload(
        readings,
        machine.partId,
        sensorType,
        'sensor-1',
        'Readings',
        readings.map((_, i) => [at(i), new Date(at(i).getTime() + 50)] as [Date, Date]),
        ['tabular-tag'],
      );
      assert.ok(id, 'file_id is filled');
    });

    test('getLatestTabularData returns the newest reading', async () => {
      const latest = await data.getLatestTabularData(machine.partId, 'sensor-1', sensorType, 'Readings');
      assert.ok(latest, 'data is found');
      const [timeCaptured, timeSynced, payload] = latest as [Date, Date, unknown];
      assert.deepEqual(payload, readings[4]);
      assert.ok(
        timeCaptured.getTime() >= at(4).getTime() && timeCaptured.getTime() <= at(4).getTime() + 50,
        `time_captured ${timeCaptured.toISOString()} is the newest capture time`,
      );
      assert.ok(timeSynced.getTime() >= timeCaptured.getTime(), 'time_synced is after capture');
    });

    test('tabularDataByFilter pages to the end with `last`', async () => {
      const seen: TabularData[] = [];
      const cursors: string[] = [];
      let last = '';
      for (let page = 0; page < 10; page++) {
        const result: Page<TabularData> = await data.tabularDataByFilter(
          partFilter(),
          2,
          dataApi.Order.ASCENDING,
          last,
        );
        if (result.data.length === 0) break;
        assert.ok(result.data.length <= 2, 'a page holds at most `limit` items');
        assert.ok(result.last, 'a page with data has a non-empty `last`');
        assert.ok(!cursors.includes(result.last), '`last` advances');
        cursors.push(result.last);
        last = result.last;
        seen.push(...result.data);
      }
      assert.deepEqual(
        seen.map((item) => item.data),
        readings,
        'all readings, oldest first, each exactly once',
      );
      for (const item of seen) {
        assert.equal(item.metadata?.partId, machine.partId);
        assert.equal(item.metadata?.robotId, machine.robotId);
        assert.equal(item.metadata?.organizationId, cloud.organizationId);
        assert.equal(item.metadata?.locationId, cloud.locationId);
        assert.equal(item.metadata?.componentName, 'sensor-1');
        assert.equal(item.metadata?.methodName, 'Readings');
        assert.deepEqual(item.metadata?.tags, ['tabular-tag']);
      }
      const after: Page<TabularData> = await data.tabularDataByFilter(
        partFilter(),
        2,
        dataApi.Order.ASCENDING,
        last,
      );
      assert.equal(after.data.length, 0, 'past the end stays empty');

      const newestFirst: Page<TabularData> = await data.tabularDataByFilter(
        partFilter(),
        1,
        dataApi.Order.DESCENDING,
      );
      assert.deepEqual(newestFirst.data[0]?.data, readings[4]);
      const counted: Page<TabularData> = await data.tabularDataByFilter(
        partFilter(),
        undefined,
        undefined,
        '',
        true,
      );
      assert.equal(counted.count, 5n);
      assert.equal(counted.data.length, 0, 'count_only returns no data');
    });

    test('exportTabularData streams every point of one source', async () => {
      const points: {
        payload: unknown;
        timeCaptured: Date;
        partId: string;
        tags: string[];
        methodParameters: unknown;
      }[] = await data.exportTabularData(machine.partId, 'sensor-1', sensorType, 'Readings');
      assert.deepEqual(
        points.map((point) => point.payload),
        readings,
      );
      for (const point of points) {
        assert.equal(point.partId, machine.partId);
        assert.deepEqual(point.tags, ['tabular-tag']);
        assert.ok(point.timeCaptured instanceof Date);
      }
      const window: { payload: unknown }[] = await data.exportTabularData(
        machine.partId,
        'sensor-1',
        sensorType,
        'Readings',
        at(1),
        new Date(at(3).getTime() - 1),
      );
      assert.deepEqual(
        window.map((point) => point.payload),
        [readings[1], readings[2]],
        'the interval selects [start, end)',
      );
      assert.deepEqual(
        await data.exportTabularData(machine.partId, 'other-sensor', sensorType, 'Readings'),
        [],
      );
    });

    test('binaryDataCaptureUpload stores images', async () => {
      for (const [i, image] of images.entries()) {
        const id: string = await data.binaryDataCaptureUpload(
          image,
          machine.partId,
          cameraType,
          'cam-1',
          'ReadImage',
          '.jpeg',
          [at(10 + i), at(10 + i)],
          ['image-tag'],
        );
        assert.ok(id, 'binary_data_id is returned');
        imageIds.push(id);
      }
      assert.equal(new Set(imageIds).size, images.length);
    });

    if (transport === 'grpc') {
      test('fileUpload (client streaming) stores a file', async () => {
        const contents = new TextEncoder().encode('hello from the e2e suite\n'.repeat(5000));
        fileId = await data.fileUpload(contents, machine.partId, {
          fileName: 'notes.txt',
          fileExtension: '.txt',
          tags: ['file-tag'],
          componentName: 'files',
          componentType: 'file',
          methodName: 'upload',
        });
        assert.ok(fileId);
        const [item]: BinaryData[] = await data.binaryDataByIds([fileId], true);
        assert.deepEqual(plainBytes(item?.binary), contents);
        assert.equal(item?.metadata?.fileExt, '.txt');
        assert.ok(
          item?.metadata?.fileName.endsWith('notes.txt'),
          `file name kept (${item?.metadata?.fileName})`,
        );
        assert.deepEqual(item?.metadata?.captureMetadata?.tags, ['file-tag']);
      });

      test('streamingDataCaptureUpload (client streaming) stores a large capture', async () => {
        const response = await streamingDataCaptureUpload(cloud.client, streamed, {
          partId: machine.partId,
          componentType: cameraType,
          componentName: 'cam-big',
          methodName: 'ReadImage',
          fileExtension: '.jpeg',
          requestTimes: [at(20), at(20)],
          tags: ['streamed'],
        });
        streamedId = response.binaryDataId;
        assert.ok(streamedId, 'binary_data_id is returned');
        const [item]: BinaryData[] = await data.binaryDataByIds([streamedId], true);
        assert.deepEqual(plainBytes(item?.binary), streamed);
        assert.equal(item?.metadata?.captureMetadata?.componentName, 'cam-big');
        assert.equal(item?.metadata?.timeRequested?.toDate().getTime(), at(20).getTime());
      });
    } else {
      test('client-streaming uploads are impossible over gRPC-web (SDK refuses before sending)', async () => {
        await assert.rejects(data.fileUpload(new Uint8Array(10), machine.partId, { fileExtension: '.bin' }));
      });
    }

    test('binaryDataByFilter without and with binary, paged with `last`', async () => {
      const withoutBinary: Page<BinaryData> = await data.binaryDataByFilter(
        cameraFilter(),
        50,
        dataApi.Order.ASCENDING,
        '',
        false,
      );
      assert.deepEqual(
        withoutBinary.data.map((item) => item.metadata?.binaryDataId),
        imageIds,
      );
      for (const item of withoutBinary.data) {
        assert.equal(item.binary.length, 0, 'include_binary=false leaves binary empty');
        assert.equal(item.metadata?.captureMetadata?.partId, machine.partId);
        assert.equal(item.metadata?.captureMetadata?.componentType, cameraType);
        assert.equal(item.metadata?.captureMetadata?.methodName, 'ReadImage');
        assert.equal(item.metadata?.captureMetadata?.mimeType, 'image/jpeg');
        assert.equal(item.metadata?.fileExt, '.jpeg');
      }

      const pages: BinaryData[] = [];
      let last = '';
      for (let page = 0; page < 10; page++) {
        const result: Page<BinaryData> = await data.binaryDataByFilter(
          cameraFilter(),
          1,
          dataApi.Order.ASCENDING,
          last,
          true,
        );
        if (result.data.length === 0) break;
        assert.equal(result.data.length, 1);
        assert.ok(result.last && result.last !== last, '`last` advances');
        last = result.last;
        pages.push(...result.data);
      }
      assert.deepEqual(
        pages.map((item) => plainBytes(item.binary)),
        images,
        'with binary, oldest first, every image once',
      );
      const all: Page<BinaryData> = await data.binaryDataByFilter(
        partFilter(),
        50,
        undefined,
        '',
        false,
        true,
      );
      assert.equal(
        all.count,
        BigInt(images.length + (transport === 'grpc' ? 2 : 0)),
        'count_only counts the part',
      );
    });

    test('binaryDataByIds with and without binary', async () => {
      const withBinary: BinaryData[] = await data.binaryDataByIds(imageIds, true);
      const byId = new Map(withBinary.map((item) => [item.metadata?.binaryDataId, item]));
      for (const [i, id] of imageIds.entries()) assert.deepEqual(plainBytes(byId.get(id)?.binary), images[i]);
      const withoutBinary: BinaryData[] = await data.binaryDataByIds([imageIds[0] as string], false);
      assert.equal(withoutBinary.length, 1);
      assert.equal(withoutBinary[0]?.binary.length, 0);
      assert.equal(withoutBinary[0]?.metadata?.binaryDataId, imageIds[0]);
    });

    test('tags: add and remove by ids, by filter, filter by tags, tagsByFilter', async () => {
      const [first, second, third] = imageIds as [string, string, string];
      await data.addTagsToBinaryDataByIds(['red', 'blue'], [first]);
      await data.addTagsToBinaryDataByIds(['red'], [first, second]);
      const tagsOf = async (id: string) => {
        const [item]: BinaryData[] = await data.binaryDataByIds([id], false);
        return [...(item?.metadata?.captureMetadata?.tags ?? [])].sort();
      };
      assert.deepEqual(await tagsOf(first), ['blue', 'image-tag', 'red'], 'set union, no duplicates');
      assert.deepEqual(await tagsOf(second), ['image-tag', 'red']);

      const tagged = (tags: string[]) =>
        new dataApi.Filter({
          partId: machine.partId,
          tagsFilter: new dataApi.TagsFilter({ type: dataApi.TagsFilterType.MATCH_BY_OR, tags }),
        });
      const blue: Page<BinaryData> = await data.binaryDataByFilter(
        tagged(['blue']),
        50,
        undefined,
        '',
        false,
      );
      assert.deepEqual(
        blue.data.map((item) => item.metadata?.binaryDataId),
        [first],
      );
      const tags: string[] = await data.tagsByFilter(cameraFilter());
      assert.deepEqual([...tags].sort(), ['blue', 'image-tag', 'red']);

      assert.equal(await data.removeTagsFromBinaryDataByIds(['red'], [first, second, third]), 2n);
      assert.deepEqual(await tagsOf(first), ['blue', 'image-tag']);

      await data.addTagsToBinaryDataByFilter(['by-filter'], cameraFilter());
      assert.ok((await tagsOf(third)).includes('by-filter'));
      assert.equal(await data.removeTagsFromBinaryDataByFilter(['by-filter'], cameraFilter()), 3n);
      assert.ok(!(await tagsOf(third)).includes('by-filter'));
    });

    test('bounding boxes: add, update, labels by filter, remove', async () => {
      const id = imageIds[0] as string;
      const bboxesOf = async () => {
        const [item]: BinaryData[] = await data.binaryDataByIds([id], false);
        return item?.metadata?.annotations?.bboxes ?? [];
      };
      const bboxId: string = await data.addBoundingBoxToImageById(id, 'cat', 0.1, 0.2, 0.5, 0.6, 0.9);
      assert.ok(bboxId);
      const [added] = await bboxesOf();
      assert.equal(added?.id, bboxId);
      assert.equal(added?.label, 'cat');
      assert.equal(added?.xMinNormalized, 0.1);
      assert.equal(added?.yMaxNormalized, 0.6);
      assert.equal(added?.confidence, 0.9);

      assert.deepEqual(await data.boundingBoxLabelsByFilter(partFilter()), ['cat']);
      await data.updateBoundingBox(id, bboxId, 'dog', 0.2, 0.3, 0.7, 0.8);
      const [updated] = await bboxesOf();
      assert.equal(updated?.label, 'dog');
      assert.equal(updated?.xMinNormalized, 0.2);
      assert.equal(updated?.yMaxNormalized, 0.8);
      assert.deepEqual(await data.boundingBoxLabelsByFilter(partFilter()), ['dog']);

      const byLabel: Page<BinaryData> = await data.binaryDataByFilter(
        new dataApi.Filter({ partId: machine.partId, bboxLabels: ['dog'] }),
        50,
        undefined,
        '',
        false,
      );
      assert.deepEqual(
        byLabel.data.map((item) => item.metadata?.binaryDataId),
        [id],
      );

      await data.removeBoundingBoxFromImageById(id, bboxId);
      assert.deepEqual(await bboxesOf(), []);
      assert.deepEqual(await data.boundingBoxLabelsByFilter(partFilter()), []);
    });

    test('datasets: create, rename, list, add/remove binary, merge, delete', async () => {
      const [first, second, third] = imageIds as [string, string, string];
      const datasetA: string = await data.createDataset('set-a', cloud.organizationId);
      const datasetB: string = await data.createDataset('set-b', cloud.organizationId);
      assert.ok(datasetA && datasetB && datasetA !== datasetB);

      await data.renameDataset(datasetA, 'set-a-renamed');
      const listed: Dataset[] = await data.listDatasetsByOrganizationID(cloud.organizationId);
      assert.deepEqual(listed.map((dataset) => dataset.name).sort(), ['set-a-renamed', 'set-b']);
      const [byId]: Dataset[] = await data.listDatasetsByIds([datasetA]);
      assert.equal(byId?.name, 'set-a-renamed');
      assert.equal(byId?.organizationId, cloud.organizationId);
      assert.ok(byId?.created instanceof Date, 'time_created is set');

      await data.addBinaryDataToDatasetByIds([first, second], datasetA);
      await data.addBinaryDataToDatasetByIds([third], datasetB);
      const inDataset = async (datasetId: string) => {
        const page: Page<BinaryData> = await data.binaryDataByFilter(
          new dataApi.Filter({ datasetId }),
          50,
          dataApi.Order.ASCENDING,
          '',
          false,
        );
        return page.data.map((item) => item.metadata?.binaryDataId);
      };
      assert.deepEqual(await inDataset(datasetA), [first, second]);
      const [firstItem]: BinaryData[] = await data.binaryDataByIds([first], false);
      assert.deepEqual(firstItem?.metadata?.datasetIds, [datasetA]);

      assert.deepEqual(
        await data.tagsByFilter(new dataApi.Filter({ datasetId: datasetA })),
        ['blue', 'image-tag'],
        'tagsByFilter with a dataset filter',
      );
      assert.deepEqual(
        await data.tagsByFilter(new dataApi.Filter({ partId: machine.partId, mimeType: ['image/jpeg'] })),
        // Over gRPC the client-streaming test also stored a JPEG tagged `streamed`.
        streamedId ? ['blue', 'image-tag', 'streamed'] : ['blue', 'image-tag'],
        'tagsByFilter with a mime type filter',
      );
      await data.removeBinaryDataFromDatasetByIds([second], datasetA);
      assert.deepEqual(await inDataset(datasetA), [first]);

      const merged = await sdkDatasetRpcs(cloud.client).mergeDatasets({
        datasetIds: [datasetA, datasetB],
        name: 'merged',
        organizationId: cloud.organizationId,
      });
      assert.ok(merged.datasetId);
      assert.deepEqual(await inDataset(merged.datasetId), [first, third]);

      await data.deleteDataset(datasetB);
      const remaining: Dataset[] = await data.listDatasetsByOrganizationID(cloud.organizationId);
      assert.deepEqual(remaining.map((dataset) => dataset.name).sort(), ['merged', 'set-a-renamed']);
      const [thirdItem]: BinaryData[] = await data.binaryDataByIds([third], false);
      assert.ok(!thirdItem?.metadata?.datasetIds.includes(datasetB), 'a deleted dataset leaves the items');
      assert.deepEqual(await data.listDatasetsByIds([datasetB]), []);
    });

    test('createBinaryDataSignedURL gives a link that works without a token', async () => {
      const url: string = await data.createBinaryDataSignedURL(imageIds[1] as string, 5);
      assert.match(url, /^https?:\/\//);
      const response = await fetch(url);
      assert.equal(response.status, 200);
      assert.deepEqual(new Uint8Array(await response.arrayBuffer()), images[1]);
      const tampered = await fetch(url.replace(/.$/, (char) => (char === 'a' ? 'b' : 'a')));
      assert.notEqual(tampered.status, 200, 'a modified link is refused');
    });

    test('error cases answer with the right codes', async () => {
      const id = imageIds[0] as string;
      await expectRpcError(data.binaryDataByIds([]), Code.InvalidArgument, 'binaryDataByIds([]): ');
      await expectRpcError(
        data.deleteBinaryDataByIds([]),
        Code.InvalidArgument,
        'deleteBinaryDataByIds([]): ',
      );
      await expectRpcError(data.addTagsToBinaryDataByIds(['x'], []), Code.InvalidArgument, 'addTags([]): ');
      await expectRpcError(
        data.removeTagsFromBinaryDataByIds(['x'], []),
        Code.InvalidArgument,
        'removeTags([]): ',
      );
      await expectRpcError(
        data.addBinaryDataToDatasetByIds([], randomId()),
        Code.InvalidArgument,
        'addBinaryDataToDataset([]): ',
      );
      await expectRpcError(
        data.addBoundingBoxToImageById(id, 'x', -0.1, 0.1, 0.5, 0.5),
        Code.InvalidArgument,
        'bbox x_min < 0: ',
      );
      await expectRpcError(
        data.addBoundingBoxToImageById(id, 'x', 0.1, 0.1, 1.5, 0.5),
        Code.InvalidArgument,
        'bbox x_max > 1: ',
      );
      await expectRpcError(
        data.addBoundingBoxToImageById(id, 'x', 0.6, 0.1, 0.5, 0.5),
        Code.InvalidArgument,
        'bbox min > max: ',
      );
      await expectRpcError(
        data.tabularDataCaptureUpload([{ a: 1 }], randomId(), sensorType, 's', 'Readings', [[at(0), at(0)]]),
        [Code.NotFound, Code.InvalidArgument],
        'upload to an unknown part: ',
      );
      await expectRpcError(
        data.binaryDataCaptureUpload(
          images[0] as Uint8Array,
          randomId(),
          cameraType,
          'c',
          'ReadImage',
          '.jpeg',
          [at(0), at(0)],
        ),
        [Code.NotFound, Code.InvalidArgument],
        'binary upload to an unknown part: ',
      );
      await expectRpcError(
        data.tabularDataByFilter(partFilter(), 2, dataApi.Order.ASCENDING, 'not-a-cursor'),
        Code.InvalidArgument,
        'tabular bad cursor: ',
      );
      await expectRpcError(
        data.binaryDataByFilter(partFilter(), 2, dataApi.Order.ASCENDING, 'not-a-cursor', false),
        Code.InvalidArgument,
        'binary bad cursor: ',
      );
      await expectRpcError(
        data.createBinaryDataSignedURL(id, 10081),
        Code.InvalidArgument,
        'signed URL > 7 days: ',
      );
      await expectRpcError(
        data.createDataset('', cloud.organizationId),
        Code.InvalidArgument,
        'empty dataset name: ',
      );
      await expectRpcError(data.renameDataset(randomId(), 'x'), Code.NotFound, 'rename unknown dataset: ');
      await expectRpcError(
        data.updateBoundingBox(id, randomId(), 'x', 0.1, 0.1, 0.2, 0.2),
        Code.NotFound,
        'update unknown bbox: ',
      );
    });

    test('deleteBinaryDataByIds and deleteBinaryDataByFilter', async () => {
      const [first, second, third] = imageIds as [string, string, string];
      assert.equal(await data.deleteBinaryDataByIds([first]), 1n);
      assert.deepEqual(await data.binaryDataByIds([first], false), [], 'a deleted item is gone');
      assert.equal(await data.deleteBinaryDataByFilter(cameraFilter()), 2n);
      const left: Page<BinaryData> = await data.binaryDataByFilter(cameraFilter(), 50, undefined, '', false);
      assert.equal(left.data.length, 0);
      assert.deepEqual(await data.binaryDataByIds([second, third], false), []);
      if (transport === 'grpc') {
        const others: Page<BinaryData> = await data.binaryDataByFilter(
          partFilter(),
          50,
          undefined,
          '',
          false,
        );
        assert.deepEqual(
          others.data.map((item) => item.metadata?.binaryDataId).sort(),
          [fileId, streamedId].sort(),
          'the filter only deleted the camera images',
        );
      }
    });

    test('deleteTabularData(org, 0) deletes every reading', async () => {
      assert.equal(await data.deleteTabularData(cloud.organizationId, 0), 5n);
      const page: Page<TabularData> = await data.tabularDataByFilter(partFilter());
      assert.equal(page.data.length, 0);
      assert.equal(await data.getLatestTabularData(machine.partId, 'sensor-1', sensorType, 'Readings'), null);
    });
  });
}
