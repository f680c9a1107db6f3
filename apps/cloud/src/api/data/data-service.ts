import type { ServiceImpl } from '@connectrpc/connect';
import { dataPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import {
  addBoundingBox,
  boundingBoxLabelsByFilter,
  removeBoundingBox,
  updateBoundingBox,
} from '../../domain/data/annotations/bounding-boxes.ts';
import { changeDatasetMembership } from '../../domain/data/datasets/datasets.ts';
import {
  deleteBinaryDataByFilter,
  deleteBinaryDataByIds,
  deleteTabularData,
} from '../../domain/data/deletion/data-deletion.ts';
import { type MqlDataSource, tabularDataByMql } from '../../domain/data/mql/tabular-data-by-mql.ts';
import {
  type BinaryWithContent,
  binaryDataByFilter,
  binaryDataByIds,
} from '../../domain/data/query/binary-queries.ts';
import {
  createBinaryDataSignedUrl,
  signedUrlForItem,
  signedUrlLifetimeMs,
} from '../../domain/data/query/binary-signed-urls.ts';
import {
  type ExportedReading,
  exportTabularData,
  getLatestTabularData,
  tabularDataByFilter,
} from '../../domain/data/query/tabular-queries.ts';
import {
  createSavedQuery,
  deleteSavedQuery,
  getSavedQuery,
  listSavedQueries,
  type SavedQuery,
  updateSavedQuery,
} from '../../domain/data/saved-queries/saved-queries.ts';
import {
  addTagsByFilter,
  addTagsByIds,
  removeTagsByFilter,
  removeTagsByIds,
  tagsByFilter,
} from '../../domain/data/tags/binary-tags.ts';
import { principalOf } from '../context.ts';
import { toConnectError } from '../interceptors.ts';
import {
  binaryMetadataToProto,
  captureMetadataToProto,
  filterFromProto,
  microsFromTimestamp,
  refFromProto,
  refsFromProto,
  sortOrderFromProto,
  timestampFromMicros,
  timestampFromMs,
} from './data-converters.ts';
import { indexHandlers } from './index-handlers.ts';
import { sqlQueryHandlers } from './sql-query-handlers.ts';

/**
 * `viam.app.data.v1.DataService`: reads, tags, bounding boxes, deletes and signed URLs (wire-protocol
 * §2.1–2.3), TabularDataByMQL and saved queries.
 */
export function dataServiceHandlers(deps: CloudDeps): Partial<ServiceImpl<typeof dataPb.DataService>> {
  // Download links in BinaryMetadata.uri stay valid this long.
  const metadataUriLifetimeMs = 60 * 60 * 1000;

  async function binaryToProto(entries: BinaryWithContent[]): Promise<dataPb.BinaryData[]> {
    const expiresAtMs = deps.clock.nowMs() + metadataUriLifetimeMs;
    return Promise.all(
      entries.map(async ({ item, binary }) => ({
        $typeName: 'viam.app.data.v1.BinaryData' as const,
        binary: binary ?? new Uint8Array(),
        metadata: binaryMetadataToProto(item, await signedUrlForItem(deps, item, expiresAtMs)),
      })),
    );
  }

  const mqlDeps = { db: deps.db, clock: deps.clock, queryLimits: deps.config.queryLimits };

  // toConnectError reports only unexpected (Internal) errors.
  const reportStreamError = (error: unknown, procedure: string) =>
    console.error(`${procedure} failed`, error);

  return {
    async tabularDataByFilter(req, context) {
      const request = req.dataRequest;
      const page = await tabularDataByFilter(deps, principalOf(context), {
        filter: filterFromProto(request?.filter),
        limit: Number(request?.limit ?? 0n),
        last: request?.last ?? '',
        order: sortOrderFromProto(request?.sortOrder ?? dataPb.Order.UNSPECIFIED),
        countOnly: req.countOnly,
      });
      return {
        metadata: page.metadata.map(captureMetadataToProto),
        data: page.readings.map(({ reading, metadataIndex }) => ({
          data: reading.data as dataPb.TabularData['data'],
          metadataIndex,
          timeRequested: timestampFromMicros(reading.timeRequested),
          timeReceived: timestampFromMicros(reading.timeReceived),
        })),
        count: BigInt(page.count),
        last: page.last,
        totalSizeBytes: BigInt(page.totalSizeBytes),
      };
    },

    async *exportTabularData(req, context) {
      const principal = principalOf(context);
      const start = microsFromTimestamp(req.interval?.start);
      const end = microsFromTimestamp(req.interval?.end);
      const rows = exportTabularData(
        deps,
        principal,
        {
          partId: req.partId,
          resourceName: req.resourceName,
          resourceSubtype: req.resourceSubtype,
          methodName: req.methodName,
          ...(req.additionalParameters === undefined
            ? {}
            : { additionalParameters: req.additionalParameters }),
        },
        { ...(start === undefined ? {} : { start }), ...(end === undefined ? {} : { end }) },
        context.signal,
      );
      // Errors of a streaming call surface while iterating, after the error interceptor returned.
      const iterator = rows[Symbol.asyncIterator]();
      for (;;) {
        let next: IteratorResult<ExportedReading>;
        try {
          next = await iterator.next();
        } catch (error) {
          throw toConnectError(error, 'viam.app.data.v1.DataService/ExportTabularData', reportStreamError);
        }
        if (next.done) return;
        const { reading, metadata } = next.value;
        yield {
          partId: metadata.partId,
          resourceName: metadata.componentName,
          resourceSubtype: metadata.componentType,
          methodName: metadata.methodName,
          timeCaptured: timestampFromMicros(reading.capturedAt),
          organizationId: metadata.organizationId,
          locationId: metadata.locationId,
          robotName: metadata.robotName,
          robotId: metadata.robotId,
          partName: metadata.partName,
          methodParameters: metadata.methodParameters as dataPb.ExportTabularDataResponse['payload'] & object,
          tags: [...metadata.tags],
          payload: reading.data as dataPb.ExportTabularDataResponse['payload'] & object,
        };
      }
    },

    async getLatestTabularData(req, context) {
      const latest = await getLatestTabularData(deps, principalOf(context), {
        partId: req.partId,
        resourceName: req.resourceName,
        resourceSubtype: req.resourceSubtype,
        methodName: req.methodName,
        ...(req.additionalParameters === undefined ? {} : { additionalParameters: req.additionalParameters }),
      });
      if (!latest) return {};
      return {
        timeCaptured: timestampFromMicros(latest.capturedAt),
        timeSynced: timestampFromMicros(latest.syncedAt),
        payload: latest.data as dataPb.GetLatestTabularDataResponse['payload'] & object,
      };
    },

    async binaryDataByFilter(req, context) {
      const request = req.dataRequest;
      const page = await binaryDataByFilter(deps, principalOf(context), {
        filter: filterFromProto(request?.filter),
        limit: Number(request?.limit ?? 0n),
        last: request?.last ?? '',
        order: sortOrderFromProto(request?.sortOrder ?? dataPb.Order.UNSPECIFIED),
        includeBinary: req.includeBinary,
        countOnly: req.countOnly,
        includeInternalData: req.includeInternalData,
      });
      return {
        data: await binaryToProto(page.items),
        count: BigInt(page.count),
        last: page.last,
        totalSizeBytes: BigInt(page.totalSizeBytes),
      };
    },

    async binaryDataByIDs(req, context) {
      const refs = refsFromProto(req.binaryDataIds, req.binaryIds);
      const entries = await binaryDataByIds(deps, principalOf(context), refs, req.includeBinary);
      return { data: await binaryToProto(entries), count: BigInt(entries.length) };
    },

    async deleteTabularData(req, context) {
      const deleted = await deleteTabularData(deps, principalOf(context), {
        organizationId: req.organizationId,
        deleteOlderThanDays: req.deleteOlderThanDays,
      });
      return { deletedCount: BigInt(deleted) };
    },

    async deleteBinaryDataByFilter(req, context) {
      const deleted = await deleteBinaryDataByFilter(
        deps,
        principalOf(context),
        filterFromProto(req.filter),
        req.includeInternalData,
      );
      return { deletedCount: BigInt(deleted) };
    },

    async deleteBinaryDataByIDs(req, context) {
      const deleted = await deleteBinaryDataByIds(
        deps,
        principalOf(context),
        refsFromProto(req.binaryDataIds, req.binaryIds),
      );
      return { deletedCount: BigInt(deleted) };
    },

    async addTagsToBinaryDataByIDs(req, context) {
      await addTagsByIds(
        deps,
        principalOf(context),
        refsFromProto(req.binaryDataIds, req.binaryIds),
        req.tags,
      );
      return {};
    },

    async addTagsToBinaryDataByFilter(req, context) {
      await addTagsByFilter(deps, principalOf(context), filterFromProto(req.filter), req.tags);
      return {};
    },

    async removeTagsFromBinaryDataByIDs(req, context) {
      const count = await removeTagsByIds(
        deps,
        principalOf(context),
        refsFromProto(req.binaryDataIds, req.binaryIds),
        req.tags,
      );
      return { deletedCount: BigInt(count) };
    },

    async removeTagsFromBinaryDataByFilter(req, context) {
      const count = await removeTagsByFilter(
        deps,
        principalOf(context),
        filterFromProto(req.filter),
        req.tags,
      );
      return { deletedCount: BigInt(count) };
    },

    async tagsByFilter(req, context) {
      return { tags: await tagsByFilter(deps, principalOf(context), filterFromProto(req.filter)) };
    },

    async addBoundingBoxToImageByID(req, context) {
      const { ref, shownId } = refFromProto(req.binaryDataId, req.binaryId);
      const bboxId = await addBoundingBox(deps, principalOf(context), ref, shownId, {
        label: req.label,
        xMin: req.xMinNormalized,
        yMin: req.yMinNormalized,
        xMax: req.xMaxNormalized,
        yMax: req.yMaxNormalized,
        ...(req.confidence === undefined ? {} : { confidence: req.confidence }),
      });
      return { bboxId };
    },

    async removeBoundingBoxFromImageByID(req, context) {
      const { ref, shownId } = refFromProto(req.binaryDataId, req.binaryId);
      await removeBoundingBox(deps, principalOf(context), ref, shownId, req.bboxId);
      return {};
    },

    async updateBoundingBox(req, context) {
      const { ref, shownId } = refFromProto(req.binaryDataId, req.binaryId);
      await updateBoundingBox(deps, principalOf(context), ref, shownId, req.bboxId, {
        ...(req.label === undefined ? {} : { label: req.label }),
        ...(req.xMinNormalized === undefined ? {} : { xMin: req.xMinNormalized }),
        ...(req.yMinNormalized === undefined ? {} : { yMin: req.yMinNormalized }),
        ...(req.xMaxNormalized === undefined ? {} : { xMax: req.xMaxNormalized }),
        ...(req.yMaxNormalized === undefined ? {} : { yMax: req.yMaxNormalized }),
        ...(req.confidence === undefined ? {} : { confidence: req.confidence }),
      });
      return {};
    },

    async boundingBoxLabelsByFilter(req, context) {
      return {
        labels: await boundingBoxLabelsByFilter(deps, principalOf(context), filterFromProto(req.filter)),
      };
    },

    async addBinaryDataToDatasetByIDs(req, context) {
      await changeDatasetMembership(deps, principalOf(context), {
        refs: refsFromProto(req.binaryDataIds, req.binaryIds),
        datasetId: req.datasetId,
        change: 'add',
      });
      return {};
    },

    async removeBinaryDataFromDatasetByIDs(req, context) {
      await changeDatasetMembership(deps, principalOf(context), {
        refs: refsFromProto(req.binaryDataIds, req.binaryIds),
        datasetId: req.datasetId,
        change: 'remove',
      });
      return {};
    },

    async tabularDataByMQL(req, context) {
      const rawData = await tabularDataByMql(
        mqlDeps,
        principalOf(context),
        {
          organizationId: req.organizationId,
          stages: req.mqlBinary,
          dataSource: mqlDataSourceFromProto(req.dataSource, req.useRecentData),
          queryPrefixName: req.queryPrefixName,
        },
        context.signal,
      );
      return { rawData };
    },

    async createSavedQuery(req, context) {
      const id = await createSavedQuery(deps, principalOf(context), {
        organizationId: req.organizationId,
        name: req.name,
        stages: req.mqlBinary,
      });
      return { id };
    },

    async updateSavedQuery(req, context) {
      await updateSavedQuery(deps, principalOf(context), {
        id: req.id,
        name: req.name,
        stages: req.mqlBinary,
      });
      return {};
    },

    async getSavedQuery(req, context) {
      return { savedQuery: savedQueryToProto(await getSavedQuery(deps, principalOf(context), req.id)) };
    },

    async deleteSavedQuery(req, context) {
      await deleteSavedQuery(deps, principalOf(context), req.id);
      return {};
    },

    async listSavedQueries(req, context) {
      const queries = await listSavedQueries(deps, principalOf(context), {
        organizationId: req.organizationId,
        limit: Number(req.limit),
      });
      return { queries: queries.map(savedQueryToProto) };
    },

    async createBinaryDataSignedURL(req, context) {
      const { ref, shownId } = refFromProto(req.binaryDataId, undefined);
      const lifetimeMs = signedUrlLifetimeMs(req.expirationMinutes);
      const { url, expiresAtMs } = await createBinaryDataSignedUrl(
        deps,
        principalOf(context),
        ref,
        shownId,
        lifetimeMs,
      );
      return { signedUrl: url, expiresAt: timestampFromMs(expiresAtMs) };
    },
    ...sqlQueryHandlers(deps),
    ...indexHandlers(deps),
  };
}

function mqlDataSourceFromProto(
  source: dataPb.TabularDataSource | undefined,
  useRecentData?: boolean,
): MqlDataSource {
  switch (source?.type ?? dataPb.TabularDataSourceType.UNSPECIFIED) {
    case dataPb.TabularDataSourceType.HOT_STORAGE:
      return { type: 'hot-storage' };
    case dataPb.TabularDataSourceType.PIPELINE_SINK:
      return { type: 'pipeline-sink', pipelineId: source?.pipelineId ?? '' };
    default:
      // Deprecated use_recent_data = HOT_STORAGE (wire-protocol §2.3).
      return useRecentData ? { type: 'hot-storage' } : { type: 'standard' };
  }
}

function savedQueryToProto(query: SavedQuery) {
  return {
    $typeName: 'viam.app.data.v1.Query' as const,
    id: query.id,
    organizationId: query.organizationId,
    name: query.name,
    mqlBinary: query.stages,
    createdOn: timestampFromMs(query.createdAtMs),
    updatedAt: timestampFromMs(query.updatedAtMs),
  };
}
