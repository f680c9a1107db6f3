import type { Principal } from '../../auth/principal.ts';
import { invalidArgument, notFound } from '../../errors.ts';
import type { BinaryDataRef } from './binary-data-ids.ts';
import {
  countBinary,
  type SortOrder,
  selectBinaryByIds,
  selectBinaryPage,
} from './binary-data-repository.ts';
import type { BinaryItem } from './capture-metadata.ts';
import { type DataFilter, validateFilter } from './data-filter.ts';
import { type DataQueryDeps, effectiveLimit, pageLimits } from './data-query-deps.ts';
import { type DataScope, dataScopeOf, reachableOrganizations, scopeConditions } from './data-scope.ts';
import { compileFilter } from './filter-sql.ts';
import { decodeCursor, encodeCursor } from './page-cursor.ts';
import { createSqlParams, type SqlParams } from './sql-params.ts';

export interface BinaryPageRequest {
  filter: DataFilter;
  limit: number;
  last: string;
  order: SortOrder;
  includeBinary: boolean;
  countOnly: boolean;
  includeInternalData: boolean;
}

export interface BinaryWithContent {
  item: BinaryItem;
  /** The stored bytes when requested, else undefined. */
  binary?: Uint8Array;
}

export interface BinaryPage {
  items: BinaryWithContent[];
  count: number;
  last: string;
  totalSizeBytes: number;
}

/**
 * Conditions selecting the binary items a filter matches for this caller, or undefined when nothing
 * can match. Validates the filter.
 */
export function binaryFilterConditions(
  principal: Principal,
  rawFilter: DataFilter,
  includeInternalData: boolean,
  params: SqlParams,
  prefix = 'filter',
): string[] | undefined {
  const filter = validateFilter(rawFilter, prefix);
  const conditions = compileFilter('binary', filter, dataScopeOf(principal), 'b', params);
  if (conditions && !includeInternalData) conditions.push('NOT b.internal');
  return conditions;
}

export async function binaryDataByFilter(
  deps: DataQueryDeps,
  principal: Principal,
  request: BinaryPageRequest,
): Promise<BinaryPage> {
  const after = decodeCursor('binary', request.last);
  const params = createSqlParams();
  const conditions = binaryFilterConditions(
    principal,
    request.filter,
    request.includeInternalData,
    params,
    'data_request.filter',
  );
  if (!conditions) return { items: [], count: 0, last: '', totalSizeBytes: 0 };
  if (request.countOnly) {
    const { count, sizeBytes } = await countBinary(deps.db, conditions, params);
    return { items: [], count, last: '', totalSizeBytes: sizeBytes };
  }
  const limit = effectiveLimit(request.limit, pageLimits.maxBinaryLimit);
  const found = await selectBinaryPage(deps.db, { conditions, params, order: request.order, after, limit });
  const items = await withContent(deps, found, request.includeBinary);
  const lastItem = items.at(-1)?.item;
  return {
    items,
    count: items.length,
    last: lastItem
      ? encodeCursor('binary', { capturedAt: lastItem.capturedAt, id: lastItem.binaryDataId })
      : '',
    totalSizeBytes: items.reduce((sum, { item }) => sum + item.sizeBytes, 0),
  };
}

/** Adds blob bytes, stopping once the page passes `maxPageBytes` (always at least one item). */
async function withContent(
  deps: DataQueryDeps,
  items: BinaryItem[],
  includeBinary: boolean,
): Promise<BinaryWithContent[]> {
  if (!includeBinary) return items.map((item) => ({ item }));
  const out: BinaryWithContent[] = [];
  let bytes = 0;
  for (const item of items) {
    if (out.length > 0 && bytes + item.sizeBytes > pageLimits.maxPageBytes) break;
    const binary = await deps.blobs.read(item.blobKey);
    bytes += binary.byteLength;
    out.push({ item, binary });
  }
  return out;
}

/** Scope conditions alone (no filter): the items this caller may touch at all. */
export function scopeOnlyConditions(scope: DataScope, params: SqlParams): string[] | undefined {
  const organizations = reachableOrganizations(scope);
  if (organizations.length === 0) return undefined;
  return scopeConditions(scope, organizations, 'b', params);
}

/**
 * The items the references name that this caller may see. Unknown IDs and IDs of other organizations
 * are alike simply absent.
 */
export async function findBinaryItems(
  deps: DataQueryDeps,
  principal: Principal,
  refs: readonly BinaryDataRef[],
): Promise<BinaryItem[]> {
  const params = createSqlParams();
  const conditions = scopeOnlyConditions(dataScopeOf(principal), params);
  if (!conditions || refs.length === 0) return [];
  return selectBinaryByIds(
    deps.db,
    refs.map((ref) => ref.binaryDataId),
    conditions,
    params,
  );
}

/** One item the caller may see, or NotFound (the same for unknown and foreign IDs). */
export async function requireBinaryItem(
  deps: DataQueryDeps,
  principal: Principal,
  ref: BinaryDataRef,
  shownId: string,
): Promise<BinaryItem> {
  const [item] = await findBinaryItems(deps, principal, [ref]);
  if (!item) throw notFound('binary data', shownId);
  return item;
}

export async function binaryDataByIds(
  deps: DataQueryDeps,
  principal: Principal,
  refs: readonly BinaryDataRef[],
  includeBinary: boolean,
): Promise<BinaryWithContent[]> {
  const items = await findBinaryItems(deps, principal, refs);
  if (!includeBinary) return items.map((item) => ({ item }));
  const totalBytes = items.reduce((sum, item) => sum + item.sizeBytes, 0);
  if (totalBytes > maxBytesByIds) {
    throw invalidArgument(
      'binary_data_ids',
      `the requested items hold ${totalBytes} bytes; with include_binary at most ${maxBytesByIds} bytes per call — request fewer IDs`,
    );
  }
  return Promise.all(items.map(async (item) => ({ item, binary: await deps.blobs.read(item.blobKey) })));
}

const maxBytesByIds = 24 * 1024 * 1024;
