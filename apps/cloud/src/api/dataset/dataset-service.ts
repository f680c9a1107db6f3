import type { ServiceImpl } from '@connectrpc/connect';
import type { datasetPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import {
  createDataset,
  type Dataset,
  deleteDataset,
  listDatasetsByIds,
  listDatasetsByOrganization,
  mergeDatasets,
  renameDataset,
} from '../../domain/data/datasets/datasets.ts';
import { principalOf } from '../context.ts';
import { timestampFromMs } from '../data/data-converters.ts';

function datasetToProto(dataset: Dataset) {
  return {
    id: dataset.id,
    name: dataset.name,
    organizationId: dataset.organizationId,
    timeCreated: timestampFromMs(dataset.createdAtMs),
  };
}

/** `viam.app.dataset.v1.DatasetService` (wire-protocol §2.6). */
export function datasetServiceHandlers(
  deps: CloudDeps,
): Partial<ServiceImpl<typeof datasetPb.DatasetService>> {
  return {
    async createDataset(req, context) {
      return {
        id: await createDataset(deps, principalOf(context), {
          name: req.name,
          organizationId: req.organizationId,
        }),
      };
    },
    async deleteDataset(req, context) {
      await deleteDataset(deps, principalOf(context), req.id);
      return {};
    },
    async renameDataset(req, context) {
      await renameDataset(deps, principalOf(context), { id: req.id, name: req.name });
      return {};
    },
    async listDatasetsByOrganizationID(req, context) {
      const datasets = await listDatasetsByOrganization(deps, principalOf(context), req.organizationId);
      return { datasets: datasets.map(datasetToProto) };
    },
    async listDatasetsByIDs(req, context) {
      const datasets = await listDatasetsByIds(deps, principalOf(context), req.ids);
      return { datasets: datasets.map(datasetToProto) };
    },
    async mergeDatasets(req, context) {
      const datasetId = await mergeDatasets(deps, principalOf(context), {
        datasetIds: req.datasetIds,
        name: req.name,
        organizationId: req.organizationId,
      });
      return { datasetId };
    },
  };
}
