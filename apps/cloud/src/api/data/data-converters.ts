import { create, fromJson, type JsonValue } from '@bufbuild/protobuf';
import { type Any, anyPack, type Timestamp, TimestampSchema, ValueSchema } from '@bufbuild/protobuf/wkt';
import { dataPb } from '@mcloud/protocol';
import type { BinaryDataRef, LegacyBinaryId } from '../../domain/data/query/binary-data-ids.ts';
import {
  collectBinaryRefs,
  parseBinaryDataId,
  refFromLegacy,
} from '../../domain/data/query/binary-data-ids.ts';
import type { SortOrder } from '../../domain/data/query/binary-data-repository.ts';
import type { BinaryItem, CaptureMetadata, JsonRecord } from '../../domain/data/query/capture-metadata.ts';
import {
  type DataFilter,
  type EpochMicros,
  emptyFilter,
  type TagsMatch,
} from '../../domain/data/query/data-filter.ts';
import { invalidArgument } from '../../domain/errors.ts';

/** protobuf ⇄ domain for the data plane; no logic beyond shape. */

const microsPerSecond = 1_000_000n;

export function microsFromTimestamp(timestamp: Timestamp | undefined): EpochMicros | undefined {
  if (!timestamp) return undefined;
  return timestamp.seconds * microsPerSecond + BigInt(Math.floor(timestamp.nanos / 1000));
}

export function timestampFromMicros(micros: EpochMicros | undefined): Timestamp | undefined {
  if (micros === undefined) return undefined;
  let seconds = micros / microsPerSecond;
  let rest = micros % microsPerSecond;
  if (rest < 0n) {
    rest += microsPerSecond;
    seconds -= 1n;
  }
  return create(TimestampSchema, { seconds, nanos: Number(rest) * 1000 });
}

export function timestampFromMs(ms: number): Timestamp {
  return timestampFromMicros(BigInt(Math.round(ms)) * 1000n) as Timestamp;
}

function tagsMatchFromProto(tagsFilter: dataPb.TagsFilter | undefined): TagsMatch {
  if (!tagsFilter) return { kind: 'any' };
  switch (tagsFilter.type) {
    case dataPb.TagsFilterType.TAGGED:
      return { kind: 'tagged' };
    case dataPb.TagsFilterType.UNTAGGED:
      return { kind: 'untagged' };
    case dataPb.TagsFilterType.MATCH_BY_OR:
    case dataPb.TagsFilterType.UNSPECIFIED:
      return tagsFilter.tags.length ? { kind: 'match-any', tags: tagsFilter.tags } : { kind: 'any' };
    default:
      throw invalidArgument(
        'filter.tags_filter.type',
        'must be UNSPECIFIED, MATCH_BY_OR, TAGGED or UNTAGGED',
        tagsFilter.type,
      );
  }
}

export function filterFromProto(filter: dataPb.Filter | undefined): DataFilter {
  if (!filter) return emptyFilter;
  const start = microsFromTimestamp(filter.interval?.start);
  const end = microsFromTimestamp(filter.interval?.end);
  return {
    componentName: filter.componentName,
    componentType: filter.componentType,
    method: filter.method,
    robotName: filter.robotName,
    robotId: filter.robotId,
    partName: filter.partName,
    partId: filter.partId,
    locationIds: filter.locationIds,
    organizationIds: filter.organizationIds,
    mimeTypes: filter.mimeType,
    interval: { ...(start === undefined ? {} : { start }), ...(end === undefined ? {} : { end }) },
    tags: tagsMatchFromProto(filter.tagsFilter),
    bboxLabels: filter.bboxLabels,
    datasetId: filter.datasetId,
  };
}

export function sortOrderFromProto(order: dataPb.Order): SortOrder {
  return order === dataPb.Order.ASCENDING ? 'ascending' : 'descending';
}

function legacyIds(ids: readonly dataPb.BinaryID[]): LegacyBinaryId[] {
  return ids.map((id) => ({
    fileId: id.fileId,
    organizationId: id.organizationId,
    locationId: id.locationId,
  }));
}

/** `binary_data_ids` plus the deprecated `binary_ids` of one request. */
export function refsFromProto(
  ids: readonly string[],
  legacy: readonly dataPb.BinaryID[],
  names: { ids: string; legacy: string } = { ids: 'binary_data_ids', legacy: 'binary_ids' },
): BinaryDataRef[] {
  return collectBinaryRefs(ids, legacyIds(legacy), names);
}

/** The single-item form (`binary_data_id` or deprecated `binary_id`), with the ID to show in errors. */
export function refFromProto(
  id: string,
  legacy: dataPb.BinaryID | undefined,
  names: { id: string; legacy: string } = { id: 'binary_data_id', legacy: 'binary_id' },
): { ref: BinaryDataRef; shownId: string } {
  if (id !== '') return { ref: parseBinaryDataId(names.id, id), shownId: id };
  if (legacy && legacy.fileId !== '') {
    const [converted] = legacyIds([legacy]);
    const ref = refFromLegacy(names.legacy, converted as LegacyBinaryId);
    return { ref, shownId: ref.binaryDataId };
  }
  throw invalidArgument(names.id, 'is required');
}

/** Every method parameter as `Any(google.protobuf.Value)` (Go clients unpack exactly that). */
export function methodParametersToProto(parameters: JsonRecord): Record<string, Any> {
  const out: Record<string, Any> = {};
  for (const [key, value] of Object.entries(parameters)) {
    out[key] = anyPack(ValueSchema, fromJson(ValueSchema, (value ?? null) as JsonValue));
  }
  return out;
}

export function captureMetadataToProto(metadata: CaptureMetadata): dataPb.CaptureMetadata {
  return create(dataPb.CaptureMetadataSchema, {
    organizationId: metadata.organizationId,
    locationId: metadata.locationId,
    robotName: metadata.robotName,
    robotId: metadata.robotId,
    partName: metadata.partName,
    partId: metadata.partId,
    componentType: metadata.componentType,
    componentName: metadata.componentName,
    methodName: metadata.methodName,
    methodParameters: methodParametersToProto(metadata.methodParameters),
    tags: [...metadata.tags],
    mimeType: metadata.mimeType,
  });
}

export function binaryMetadataToProto(item: BinaryItem, uri: string): dataPb.BinaryMetadata {
  return create(dataPb.BinaryMetadataSchema, {
    id: item.fileId,
    binaryDataId: item.binaryDataId,
    captureMetadata: captureMetadataToProto(item.metadata),
    timeRequested: timestampFromMicros(item.timeRequested),
    timeReceived: timestampFromMicros(item.timeReceived),
    fileName: item.fileName,
    fileExt: item.fileExt,
    uri,
    annotations: {
      bboxes: item.boundingBoxes.map((box) => ({
        id: box.id,
        label: box.label,
        xMinNormalized: box.xMin,
        yMinNormalized: box.yMin,
        xMaxNormalized: box.xMax,
        yMaxNormalized: box.yMax,
        ...(box.confidence === undefined ? {} : { confidence: box.confidence }),
      })),
      classifications: item.classifications.map((classification) => ({
        id: classification.id,
        label: classification.label,
        ...(classification.confidence === undefined ? {} : { confidence: classification.confidence }),
      })),
    },
    datasetIds: [...item.datasetIds],
  });
}
