import type { ServiceImpl } from '@connectrpc/connect';
import { dataPb, dataPipelinesPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import { invalidArgument } from '../../domain/errors.ts';
import {
  createDataPipeline,
  type DataPipeline,
  deleteDataPipeline,
  getDataPipeline,
  listDataPipelineRuns,
  listDataPipelines,
  type PipelineDataSource,
  type PipelineRun,
  renameDataPipeline,
  setDataPipelineEnabled,
} from '../../domain/pipelines/data-pipelines.ts';
import { principalOf } from '../context.ts';
import { timestampFromMs } from '../data/data-converters.ts';

const { TabularDataSourceType } = dataPb;
const { DataPipelineRunStatus } = dataPipelinesPb;

function pipelineToProto(pipeline: DataPipeline) {
  return {
    id: pipeline.id,
    organizationId: pipeline.organizationId,
    name: pipeline.name,
    mqlBinary: pipeline.stages,
    schedule: pipeline.schedule,
    enabled: pipeline.enabled,
    createdOn: timestampFromMs(pipeline.createdAtMs),
    updatedAt: timestampFromMs(pipeline.updatedAtMs),
    dataSourceType:
      pipeline.dataSource === 'hot-storage'
        ? TabularDataSourceType.HOT_STORAGE
        : TabularDataSourceType.STANDARD,
  };
}

const statusToProto = {
  scheduled: DataPipelineRunStatus.SCHEDULED,
  started: DataPipelineRunStatus.STARTED,
  completed: DataPipelineRunStatus.COMPLETED,
  failed: DataPipelineRunStatus.FAILED,
} as const;

function runToProto(run: PipelineRun) {
  return {
    id: run.id,
    ...(run.startedAtMs === null ? {} : { startTime: timestampFromMs(run.startedAtMs) }),
    ...(run.endedAtMs === null ? {} : { endTime: timestampFromMs(run.endedAtMs) }),
    dataStartTime: timestampFromMs(run.dataStartMs),
    dataEndTime: timestampFromMs(run.dataEndMs),
    status: statusToProto[run.status],
    errorMessage: run.errorMessage,
  };
}

/** Creation accepts STANDARD (also when unset) or HOT_STORAGE (wire-protocol §2.7). */
function dataSourceFromProto(type: dataPb.TabularDataSourceType | undefined): PipelineDataSource {
  switch (type ?? TabularDataSourceType.UNSPECIFIED) {
    case TabularDataSourceType.UNSPECIFIED:
    case TabularDataSourceType.STANDARD:
      return 'standard';
    case TabularDataSourceType.HOT_STORAGE:
      return 'hot-storage';
    default:
      throw invalidArgument(
        'data_source_type',
        'must be TABULAR_DATA_SOURCE_TYPE_STANDARD or TABULAR_DATA_SOURCE_TYPE_HOT_STORAGE',
        TabularDataSourceType[type as number] ?? type,
      );
  }
}

/** `viam.app.datapipelines.v1.DataPipelinesService` (wire-protocol §2.7). */
export function dataPipelinesServiceHandlers(
  deps: CloudDeps,
): Partial<ServiceImpl<typeof dataPipelinesPb.DataPipelinesService>> {
  return {
    async getDataPipeline(req, context) {
      const pipeline = await getDataPipeline(deps, principalOf(context), req.id);
      return pipeline ? { dataPipeline: pipelineToProto(pipeline) } : {};
    },
    async listDataPipelines(req, context) {
      const pipelines = await listDataPipelines(deps, principalOf(context), req.organizationId);
      return { dataPipelines: pipelines.map(pipelineToProto) };
    },
    async createDataPipeline(req, context) {
      const id = await createDataPipeline(deps, principalOf(context), {
        organizationId: req.organizationId,
        name: req.name,
        stages: req.mqlBinary,
        schedule: req.schedule,
        enableBackfill: req.enableBackfill ?? false,
        dataSource: dataSourceFromProto(req.dataSourceType),
      });
      return { id };
    },
    async renameDataPipeline(req, context) {
      await renameDataPipeline(deps, principalOf(context), { id: req.id, name: req.name });
      return {};
    },
    async deleteDataPipeline(req, context) {
      await deleteDataPipeline(deps, principalOf(context), req.id);
      return {};
    },
    async enableDataPipeline(req, context) {
      await setDataPipelineEnabled(deps, principalOf(context), { id: req.id, enabled: true });
      return {};
    },
    async disableDataPipeline(req, context) {
      await setDataPipelineEnabled(deps, principalOf(context), { id: req.id, enabled: false });
      return {};
    },
    async listDataPipelineRuns(req, context) {
      const page = await listDataPipelineRuns(deps, principalOf(context), {
        id: req.id,
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return {
        pipelineId: page.pipelineId,
        runs: page.runs.map(runToProto),
        nextPageToken: page.nextPageToken,
      };
    },
  };
}
