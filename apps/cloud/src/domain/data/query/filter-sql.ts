import { componentTypeCandidates, type DataFilter } from './data-filter.ts';
import { type DataScope, effectiveOrganizations, scopeConditions } from './data-scope.ts';
import { type SqlParams, timestampFromMicrosSql } from './sql-params.ts';

/**
 * Compiles a validated filter plus the caller's scope into parameterized SQL conditions.
 *
 * - `capture-sources`: conditions on `capture_sources` (alias given); the time interval is not part of
 *   them (it applies to readings, see `intervalConditions`). Conditions that tabular data can never meet
 *   (mime types, bounding-box labels, datasets belong to binary data) yield `undefined` = no match.
 * - `binary`: conditions on `binary_data` (alias given), interval included.
 */
export function compileFilter(
  target: 'capture-sources' | 'binary',
  filter: DataFilter,
  scope: DataScope,
  alias: string,
  params: SqlParams,
): string[] | undefined {
  const organizationIds = effectiveOrganizations(scope, filter.organizationIds, 'filter.organization_ids');
  if (organizationIds.length === 0) return undefined;
  // Decided before any parameter is added: callers share `params` across several compiles.
  if (
    target === 'capture-sources' &&
    (filter.mimeTypes.length || filter.bboxLabels.length || filter.datasetId)
  ) {
    return undefined;
  }
  const conditions = scopeConditions(scope, organizationIds, alias, params);
  const column = (name: string) => `${alias}.${name}`;
  if (filter.componentName)
    conditions.push(`${column('component_name')} = ${params.add(filter.componentName)}`);
  if (filter.componentType) {
    conditions.push(
      `${column('component_type')} = ANY(${params.add(componentTypeCandidates(filter.componentType))}::text[])`,
    );
  }
  if (filter.method) conditions.push(`${column('method_name')} = ${params.add(filter.method)}`);
  if (filter.robotId) conditions.push(`${column('robot_id')} = ${params.add(filter.robotId)}::uuid`);
  if (filter.partId) conditions.push(`${column('part_id')} = ${params.add(filter.partId)}::uuid`);
  if (filter.robotName) {
    conditions.push(
      `${column('robot_id')} IN (SELECT robots.id FROM robots WHERE robots.name = ${params.add(filter.robotName)}
         AND robots.organization_id = ANY(${params.add(organizationIds)}::uuid[]))`,
    );
  }
  if (filter.partName) {
    conditions.push(
      `${column('part_id')} IN (SELECT robot_parts.id FROM robot_parts WHERE robot_parts.name = ${params.add(filter.partName)}
         AND robot_parts.organization_id = ANY(${params.add(organizationIds)}::uuid[]))`,
    );
  }
  if (filter.locationIds.length)
    conditions.push(`${column('location_id')} = ANY(${params.add(filter.locationIds)}::text[])`);
  switch (filter.tags.kind) {
    case 'match-any':
      if (filter.tags.tags.length)
        conditions.push(`${column('tags')} && ${params.add(filter.tags.tags)}::text[]`);
      break;
    case 'tagged':
      conditions.push(`cardinality(${column('tags')}) > 0`);
      break;
    case 'untagged':
      conditions.push(`cardinality(${column('tags')}) = 0`);
      break;
    case 'any':
      break;
  }
  if (target === 'capture-sources') return conditions;
  if (filter.mimeTypes.length)
    conditions.push(`${column('mime_type')} = ANY(${params.add(filter.mimeTypes)}::text[])`);
  if (filter.datasetId)
    conditions.push(`${column('dataset_ids')} @> ARRAY[${params.add(filter.datasetId)}::text]`);
  if (filter.bboxLabels.length) {
    conditions.push(
      `EXISTS (SELECT 1 FROM bounding_boxes bb WHERE bb.binary_id = ${column('id')}
         AND bb.label = ANY(${params.add(filter.bboxLabels)}::text[]))`,
    );
  }
  conditions.push(...intervalConditions(filter, column('captured_at'), params));
  return conditions;
}

/** `start <= captured_at <= end` (both ends inclusive; either may be absent). */
export function intervalConditions(filter: DataFilter, column: string, params: SqlParams): string[] {
  const conditions: string[] = [];
  if (filter.interval.start !== undefined) {
    conditions.push(`${column} >= ${timestampFromMicrosSql(params.add(filter.interval.start.toString()))}`);
  }
  if (filter.interval.end !== undefined) {
    conditions.push(`${column} <= ${timestampFromMicrosSql(params.add(filter.interval.end.toString()))}`);
  }
  return conditions;
}

/**
 * True when the filter narrows nothing below "all capture sources of the organizations", so tabular
 * reads can walk `readings_organization_time` directly instead of resolving sources first.
 */
export function isOrganizationWideTabularFilter(filter: DataFilter): boolean {
  return (
    !filter.componentName &&
    !filter.componentType &&
    !filter.method &&
    !filter.robotId &&
    !filter.partId &&
    !filter.robotName &&
    !filter.partName &&
    filter.locationIds.length === 0 &&
    (filter.tags.kind === 'any' || (filter.tags.kind === 'match-any' && filter.tags.tags.length === 0))
  );
}
