import { requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { requireUuid } from '../../validate.ts';
import type { BinaryDataRef } from '../query/binary-data-ids.ts';
import { binaryFilterConditions, findBinaryItems } from '../query/binary-queries.ts';
import type { DataFilter } from '../query/data-filter.ts';
import type { DataQueryDeps } from '../query/data-query-deps.ts';
import { allOf, createSqlParams, type SqlParams, timestampFromMicrosSql } from '../query/sql-params.ts';

const dayMs = 24 * 60 * 60 * 1000;
// Cut-offs before this are earlier than any stored capture (and PostgreSQL's timestamp range).
const earliestCutoffMs = Date.UTC(1, 0, 1);

/**
 * The UTC instant before which `DeleteTabularData` removes readings: N = 0 means everything (no
 * cut-off); N ≥ 1 keeps the current UTC day and the N − 1 days before it, so N = 1 at any time on
 * March 11 deletes everything through March 10 23:59:59.999999 UTC.
 */
export function tabularDeleteCutoffMs(nowMs: number, olderThanDays: number): number | undefined {
  if (olderThanDays === 0) return undefined;
  const startOfToday = Math.floor(nowMs / dayMs) * dayMs;
  return startOfToday - (olderThanDays - 1) * dayMs;
}

export async function deleteTabularData(
  deps: DataQueryDeps,
  principal: Principal,
  input: { organizationId: string; deleteOlderThanDays: number },
): Promise<number> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const cutoffMs = tabularDeleteCutoffMs(deps.clock.nowMs(), input.deleteOlderThanDays);
  if (cutoffMs !== undefined && cutoffMs <= earliestCutoffMs) return 0;
  const params = createSqlParams();
  const organization = params.add(organizationId);
  const conditions = [`organization_id = ${organization}::uuid`];
  // Receipts of the uploads this deletes entirely go too, so uploading such a capture again stores it
  // (an upload only partly deleted keeps its receipt: storing it again would duplicate what is left).
  // Deleting everything also removes receipts without a capture span (written before migration 0018):
  // every receipt not backed by a binary_data row is a tabular one. One statement: one snapshot.
  let receiptCondition = `NOT EXISTS (SELECT 1 FROM binary_data b WHERE b.organization_id = u.organization_id AND b.id = u.file_id)`;
  if (cutoffMs !== undefined) {
    const cutoff = timestampFromMicrosSql(params.add((BigInt(cutoffMs) * 1000n).toString()));
    conditions.push(`captured_at < ${cutoff}`);
    receiptCondition = `u.captured_until < ${cutoff}`;
  }
  const result = await deps.db.query<{ deleted: string }>(
    `WITH deleted AS (DELETE FROM readings WHERE ${allOf(conditions)} RETURNING 1),
          receipts AS (DELETE FROM upload_receipts u WHERE u.organization_id = ${organization}::uuid AND ${receiptCondition})
     SELECT count(*)::text AS deleted FROM deleted`,
    params.values,
  );
  return Number(result.rows[0]?.deleted ?? 0);
}

/**
 * Deletes the rows (their bounding boxes cascade) with their upload receipts, so the same capture can be
 * uploaded again, then the blobs no remaining row uses.
 */
async function deleteBinaryWhere(
  deps: DataQueryDeps,
  conditions: string[],
  params: SqlParams,
): Promise<number> {
  const result = await deps.db.query<{ blob_key: string }>(
    `WITH deleted AS (DELETE FROM binary_data b WHERE ${allOf(conditions)} RETURNING b.organization_id, b.id, b.blob_key),
          receipts AS (DELETE FROM upload_receipts u USING deleted d
                        WHERE u.organization_id = d.organization_id AND u.file_id = d.id)
     SELECT blob_key FROM deleted`,
    params.values,
  );
  const keys = [...new Set(result.rows.map((row) => row.blob_key))];
  if (keys.length) {
    // The rows are committed (autocommit); a blob shared with a surviving row stays.
    const stillUsed = await deps.db.query<{ blob_key: string }>(
      'SELECT DISTINCT blob_key FROM binary_data WHERE blob_key = ANY($1::text[])',
      [keys],
    );
    const used = new Set(stillUsed.rows.map((row) => row.blob_key));
    await deps.blobs.deleteMany(keys.filter((key) => !used.has(key)));
  }
  return result.rowCount ?? 0;
}

export async function deleteBinaryDataByFilter(
  deps: DataQueryDeps,
  principal: Principal,
  filter: DataFilter,
  includeInternalData: boolean,
): Promise<number> {
  const params = createSqlParams();
  const conditions = binaryFilterConditions(principal, filter, includeInternalData, params);
  if (!conditions) return 0;
  return deleteBinaryWhere(deps, conditions, params);
}

/** Deletes the caller-visible items among `refs`; unknown and foreign IDs are skipped (not counted). */
export async function deleteBinaryDataByIds(
  deps: DataQueryDeps,
  principal: Principal,
  refs: readonly BinaryDataRef[],
): Promise<number> {
  const items = await findBinaryItems(deps, principal, refs);
  if (items.length === 0) return 0;
  const params = createSqlParams();
  return deleteBinaryWhere(
    deps,
    [`b.id = ANY(${params.add(items.map((item) => item.binaryDataId))}::text[])`],
    params,
  );
}
