import type { ServiceImpl } from '@connectrpc/connect';
import { dataPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import {
  createCustomIndex,
  deleteCustomIndex,
  type IndexCollection,
  type IndexScope,
  listCustomIndexes,
} from '../../domain/data/indexes/custom-indexes.ts';
import { principalOf } from '../context.ts';

/**
 * DataService custom indexes (wire-protocol §2.3–2.4): CreateIndex, ListIndexes, DeleteIndex. Listed
 * specs are JSON text bytes (`{"key": …, "options": …}`), which the CLI prints as is.
 */
export function indexHandlers(
  deps: CloudDeps,
): Pick<ServiceImpl<typeof dataPb.DataService>, 'createIndex' | 'listIndexes' | 'deleteIndex'> {
  const encoder = new TextEncoder();
  return {
    async createIndex(req, context) {
      await createCustomIndex(deps, principalOf(context), scopeOf(req), req.indexSpec, context.signal);
      return {};
    },

    async listIndexes(req, context) {
      const indexes = await listCustomIndexes(deps, principalOf(context), scopeOf(req));
      return {
        indexes: indexes.map((index) => ({
          $typeName: 'viam.app.data.v1.Index' as const,
          collectionType: collectionToProto(index.collection),
          ...(index.pipelineName ? { pipelineName: index.pipelineName } : {}),
          indexName: index.name,
          indexSpec: [encoder.encode(index.specJson)],
          createdBy: dataPb.IndexCreator.CUSTOMER,
        })),
      };
    },

    async deleteIndex(req, context) {
      await deleteCustomIndex(deps, principalOf(context), scopeOf(req), req.indexName, context.signal);
      return {};
    },
  };
}

function scopeOf(req: {
  organizationId: string;
  collectionType: dataPb.IndexableCollection;
  pipelineName?: string | undefined;
}): IndexScope {
  return {
    organizationId: req.organizationId,
    collection: collectionFromProto(req.collectionType),
    pipelineName: req.pipelineName,
  };
}

function collectionFromProto(type: dataPb.IndexableCollection): IndexCollection | 'unspecified' {
  if (type === dataPb.IndexableCollection.HOT_STORE) return 'hot_store';
  if (type === dataPb.IndexableCollection.PIPELINE_SINK) return 'pipeline_sink';
  return 'unspecified';
}

function collectionToProto(collection: IndexCollection): dataPb.IndexableCollection {
  return collection === 'hot_store'
    ? dataPb.IndexableCollection.HOT_STORE
    : dataPb.IndexableCollection.PIPELINE_SINK;
}
