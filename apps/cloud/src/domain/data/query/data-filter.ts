import { invalidArgument } from '../../errors.ts';
import { isUuid } from '../../validate.ts';

/** Microseconds since the Unix epoch: the precision PostgreSQL stores, kept exact end to end. */
export type EpochMicros = bigint;

export type TagsMatch =
  | { kind: 'any' }
  | { kind: 'match-any'; tags: readonly string[] }
  | { kind: 'tagged' }
  | { kind: 'untagged' };

/**
 * The conditions of a data query (wire `Filter`), all AND-ed; tags and bbox labels are OR-ed inside
 * their lists. Empty strings and lists mean "no restriction".
 */
export interface DataFilter {
  componentName: string;
  componentType: string;
  method: string;
  robotName: string;
  robotId: string;
  partName: string;
  partId: string;
  locationIds: readonly string[];
  organizationIds: readonly string[];
  mimeTypes: readonly string[];
  interval: { start?: EpochMicros; end?: EpochMicros };
  tags: TagsMatch;
  bboxLabels: readonly string[];
  datasetId: string;
}

export const emptyFilter: DataFilter = {
  componentName: '',
  componentType: '',
  method: '',
  robotName: '',
  robotId: '',
  partName: '',
  partId: '',
  locationIds: [],
  organizationIds: [],
  mimeTypes: [],
  interval: {},
  tags: { kind: 'any' },
  bboxLabels: [],
  datasetId: '',
};

export const filterLimits = {
  maxListEntries: 1000,
  maxStringLength: 512,
} as const;

function checkString(field: string, value: string): string {
  if (value.length > filterLimits.maxStringLength) {
    throw invalidArgument(field, `must be at most ${filterLimits.maxStringLength} characters`, value);
  }
  return value;
}

function checkList(field: string, values: readonly string[]): readonly string[] {
  if (values.length > filterLimits.maxListEntries) {
    throw invalidArgument(
      field,
      `must contain at most ${filterLimits.maxListEntries} entries`,
      values.length,
    );
  }
  values.forEach((value, index) => {
    if (value === '') throw invalidArgument(`${field}[${index}]`, 'must not be empty');
    checkString(`${field}[${index}]`, value);
  });
  return [...new Set(values)];
}

function checkUuid(field: string, value: string): string {
  if (value === '') return '';
  if (!isUuid(value)) throw invalidArgument(field, 'must be a UUID', value);
  return value.toLowerCase();
}

/** Validates a filter (every message names the `filter.<field>` and the limit) and normalises IDs. */
export function validateFilter(filter: DataFilter, prefix = 'filter'): DataFilter {
  const field = (name: string) => `${prefix}.${name}`;
  const { start, end } = filter.interval;
  if (start !== undefined && end !== undefined && start > end) {
    throw invalidArgument(field('interval'), 'start must not be after end');
  }
  const tags = filter.tags;
  return {
    componentName: checkString(field('component_name'), filter.componentName),
    componentType: checkString(field('component_type'), filter.componentType),
    method: checkString(field('method'), filter.method),
    robotName: checkString(field('robot_name'), filter.robotName),
    robotId: checkUuid(field('robot_id'), filter.robotId),
    partName: checkString(field('part_name'), filter.partName),
    partId: checkUuid(field('part_id'), filter.partId),
    locationIds: checkList(field('location_ids'), filter.locationIds),
    organizationIds: checkList(field('organization_ids'), filter.organizationIds).map((id, index) =>
      checkUuid(`${field('organization_ids')}[${index}]`, id),
    ),
    mimeTypes: checkList(field('mime_type'), filter.mimeTypes),
    interval: filter.interval,
    tags:
      tags.kind === 'match-any'
        ? { kind: 'match-any', tags: checkList(field('tags_filter.tags'), tags.tags) }
        : tags,
    bboxLabels: checkList(field('bbox_labels'), filter.bboxLabels),
    datasetId: checkString(field('dataset_id'), filter.datasetId),
  };
}

/**
 * Component types are stored as uploaded: RDK sends the API triplet (`rdk:component:camera`), some
 * clients a short name (`camera`). A filter in either form matches both.
 */
export function componentTypeCandidates(componentType: string): string[] {
  const parts = componentType.split(':');
  if (parts.length === 3 && parts[2]) return [componentType, parts[2]];
  return [componentType, `rdk:component:${componentType}`, `rdk:service:${componentType}`];
}
