import type { Principal } from '../../auth/principal.ts';
import { invalidArgument } from '../../errors.ts';
import type { BinaryDataRef } from '../query/binary-data-ids.ts';
import { binaryFilterConditions, findBinaryItems } from '../query/binary-queries.ts';
import type { DataFilter } from '../query/data-filter.ts';
import { validateFilter } from '../query/data-filter.ts';
import type { DataQueryDeps } from '../query/data-query-deps.ts';
import { dataScopeOf, reachableOrganizations } from '../query/data-scope.ts';
import { compileFilter } from '../query/filter-sql.ts';
import { allOf, createSqlParams, type SqlParams } from '../query/sql-params.ts';

export const tagLimits = { maxTagsPerRequest: 100, maxTagLength: 256 } as const;

/** Validates a tag list: non-empty, each tag non-empty and within the length limit; de-duplicated. */
export function validateTags(tags: readonly string[], field = 'tags'): string[] {
  if (tags.length === 0) throw invalidArgument(field, 'must contain at least one tag');
  if (tags.length > tagLimits.maxTagsPerRequest) {
    throw invalidArgument(field, `must contain at most ${tagLimits.maxTagsPerRequest} tags`, tags.length);
  }
  tags.forEach((tag, index) => {
    if (tag.trim() === '') throw invalidArgument(`${field}[${index}]`, 'must not be empty');
    if (tag.length > tagLimits.maxTagLength) {
      throw invalidArgument(
        `${field}[${index}]`,
        `must be at most ${tagLimits.maxTagLength} characters`,
        tag,
      );
    }
  });
  return [...new Set(tags)];
}

const addTagsSql = (tags: string) =>
  `tags = ARRAY(SELECT DISTINCT t FROM unnest(b.tags || ${tags}::text[]) AS t ORDER BY t)`;
const removeTagsSql = (tags: string) =>
  `tags = ARRAY(SELECT t FROM unnest(b.tags) AS t WHERE t <> ALL(${tags}::text[]))`;

async function updateWhere(
  deps: DataQueryDeps,
  set: (tagsParam: string) => string,
  extra: (tagsParam: string) => string,
  tags: string[],
  conditions: string[],
  params: SqlParams,
): Promise<number> {
  const tagsParam = params.add(tags);
  const result = await deps.db.query(
    `UPDATE binary_data b SET ${set(tagsParam)} WHERE ${allOf([...conditions, extra(tagsParam)])}`,
    params.values,
  );
  return result.rowCount ?? 0;
}

async function idConditions(
  deps: DataQueryDeps,
  principal: Principal,
  refs: readonly BinaryDataRef[],
  params: SqlParams,
): Promise<string[] | undefined> {
  const items = await findBinaryItems(deps, principal, refs);
  if (items.length === 0) return undefined;
  return [`b.id = ANY(${params.add(items.map((item) => item.binaryDataId))}::text[])`];
}

/** Adds tags (set union) to the caller-visible items among `refs`; unknown IDs are skipped. */
export async function addTagsByIds(
  deps: DataQueryDeps,
  principal: Principal,
  refs: readonly BinaryDataRef[],
  rawTags: readonly string[],
): Promise<number> {
  const tags = validateTags(rawTags);
  const params = createSqlParams();
  const conditions = await idConditions(deps, principal, refs, params);
  if (!conditions) return 0;
  return updateWhere(deps, addTagsSql, (t) => `NOT (b.tags @> ${t}::text[])`, tags, conditions, params);
}

/** Removes tags; returns how many items lost at least one tag. */
export async function removeTagsByIds(
  deps: DataQueryDeps,
  principal: Principal,
  refs: readonly BinaryDataRef[],
  rawTags: readonly string[],
): Promise<number> {
  const tags = validateTags(rawTags);
  const params = createSqlParams();
  const conditions = await idConditions(deps, principal, refs, params);
  if (!conditions) return 0;
  return updateWhere(deps, removeTagsSql, (t) => `b.tags && ${t}::text[]`, tags, conditions, params);
}

export async function addTagsByFilter(
  deps: DataQueryDeps,
  principal: Principal,
  filter: DataFilter,
  rawTags: readonly string[],
): Promise<number> {
  const tags = validateTags(rawTags);
  const params = createSqlParams();
  const conditions = binaryFilterConditions(principal, filter, true, params);
  if (!conditions) return 0;
  return updateWhere(deps, addTagsSql, (t) => `NOT (b.tags @> ${t}::text[])`, tags, conditions, params);
}

export async function removeTagsByFilter(
  deps: DataQueryDeps,
  principal: Principal,
  filter: DataFilter,
  rawTags: readonly string[],
): Promise<number> {
  const tags = validateTags(rawTags);
  const params = createSqlParams();
  const conditions = binaryFilterConditions(principal, filter, true, params);
  if (!conditions) return 0;
  return updateWhere(deps, removeTagsSql, (t) => `b.tags && ${t}::text[]`, tags, conditions, params);
}

/** Distinct tags over the binary items and tabular capture sources the filter matches, sorted. */
export async function tagsByFilter(
  deps: DataQueryDeps,
  principal: Principal,
  rawFilter: DataFilter,
): Promise<string[]> {
  const filter = validateFilter(rawFilter);
  const scope = dataScopeOf(principal);
  if (reachableOrganizations(scope).length === 0) return [];
  const params = createSqlParams();
  const binary = compileFilter('binary', filter, scope, 'b', params);
  const sources = compileFilter('capture-sources', filter, scope, 's', params);
  const parts: string[] = [];
  if (binary)
    parts.push(
      `SELECT unnest(b.tags) AS tag FROM binary_data b WHERE ${allOf([...binary, 'NOT b.internal'])}`,
    );
  if (sources) {
    // A source matches only when it has readings within the interval (if one is given).
    const interval: string[] = [];
    if (filter.interval.start !== undefined || filter.interval.end !== undefined) {
      const window: string[] = [];
      if (filter.interval.start !== undefined)
        window.push(
          `r.captured_at >= (timestamptz 'epoch' + ${params.add(filter.interval.start.toString())}::bigint * interval '1 microsecond')`,
        );
      if (filter.interval.end !== undefined)
        window.push(
          `r.captured_at <= (timestamptz 'epoch' + ${params.add(filter.interval.end.toString())}::bigint * interval '1 microsecond')`,
        );
      interval.push(`EXISTS (SELECT 1 FROM readings r WHERE r.source_id = s.id AND ${allOf(window)})`);
    }
    parts.push(
      `SELECT unnest(s.tags) AS tag FROM capture_sources s WHERE ${allOf([...sources, ...interval])}`,
    );
  }
  if (parts.length === 0) return [];
  const result = await deps.db.query<{ tag: string }>(
    `SELECT DISTINCT tag FROM (${parts.join(' UNION ALL ')}) t ORDER BY tag`,
    params.values,
  );
  return result.rows.map((row) => row.tag);
}
