import type { Principal } from '../../auth/principal.ts';
import { invalidArgument, notFound } from '../../errors.ts';
import { newObjectId } from '../../shared/ids.ts';
import type { BinaryDataRef } from '../query/binary-data-ids.ts';
import { binaryFilterConditions, requireBinaryItem } from '../query/binary-queries.ts';
import type { BoundingBox } from '../query/capture-metadata.ts';
import type { DataFilter } from '../query/data-filter.ts';
import type { DataQueryDeps } from '../query/data-query-deps.ts';
import { allOf, createSqlParams } from '../query/sql-params.ts';

export const boundingBoxLimits = { maxLabelLength: 256, maxBoxesPerImage: 1000 } as const;

export type NewBoundingBox = Omit<BoundingBox, 'id'>;

/** 0 ≤ min < max ≤ 1 on both axes, confidence in [0, 1], label non-empty; each error names its field. */
export function validateBoundingBox(box: NewBoundingBox): NewBoundingBox {
  const label = box.label.trim();
  if (label === '') throw invalidArgument('label', 'is required');
  if (label.length > boundingBoxLimits.maxLabelLength) {
    throw invalidArgument('label', `must be at most ${boundingBoxLimits.maxLabelLength} characters`, label);
  }
  const coordinates = [
    ['x_min_normalized', box.xMin],
    ['y_min_normalized', box.yMin],
    ['x_max_normalized', box.xMax],
    ['y_max_normalized', box.yMax],
  ] as const;
  for (const [field, value] of coordinates) {
    if (!Number.isFinite(value) || value < 0 || value > 1)
      throw invalidArgument(field, 'must be between 0 and 1', value);
  }
  if (!(box.xMin < box.xMax)) {
    throw invalidArgument('x_min_normalized', `must be less than x_max_normalized (${box.xMax})`, box.xMin);
  }
  if (!(box.yMin < box.yMax)) {
    throw invalidArgument('y_min_normalized', `must be less than y_max_normalized (${box.yMax})`, box.yMin);
  }
  if (
    box.confidence !== undefined &&
    (!Number.isFinite(box.confidence) || box.confidence < 0 || box.confidence > 1)
  ) {
    throw invalidArgument('confidence', 'must be between 0 and 1', box.confidence);
  }
  return { ...box, label };
}

export async function addBoundingBox(
  deps: DataQueryDeps,
  principal: Principal,
  ref: BinaryDataRef,
  shownId: string,
  input: NewBoundingBox,
): Promise<string> {
  const box = validateBoundingBox(input);
  const item = await requireBinaryItem(deps, principal, ref, shownId);
  const id = newObjectId(deps.clock.nowMs());
  const result = await deps.db.query(
    `INSERT INTO bounding_boxes (id, organization_id, binary_id, label, x_min, y_min, x_max, y_max, confidence)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
      WHERE (SELECT count(*) FROM bounding_boxes WHERE binary_id = $3) < $10`,
    [
      id,
      item.metadata.organizationId,
      item.binaryDataId,
      box.label,
      box.xMin,
      box.yMin,
      box.xMax,
      box.yMax,
      box.confidence ?? null,
      boundingBoxLimits.maxBoxesPerImage,
    ],
  );
  if (!result.rowCount) {
    throw invalidArgument(
      'binary_data_id',
      `an image holds at most ${boundingBoxLimits.maxBoxesPerImage} bounding boxes`,
      shownId,
    );
  }
  return id;
}

/** Changes only the fields present in `changes`, then re-validates the whole resulting box. */
export async function updateBoundingBox(
  deps: DataQueryDeps,
  principal: Principal,
  ref: BinaryDataRef,
  shownId: string,
  boxId: string,
  changes: Partial<NewBoundingBox>,
): Promise<void> {
  if (boxId === '') throw invalidArgument('bbox_id', 'is required');
  const item = await requireBinaryItem(deps, principal, ref, shownId);
  const current = item.boundingBoxes.find((box) => box.id === boxId);
  if (!current) throw notFound('bounding box', boxId);
  const merged: NewBoundingBox = {
    label: changes.label ?? current.label,
    xMin: changes.xMin ?? current.xMin,
    yMin: changes.yMin ?? current.yMin,
    xMax: changes.xMax ?? current.xMax,
    yMax: changes.yMax ?? current.yMax,
    ...(changes.confidence !== undefined
      ? { confidence: changes.confidence }
      : current.confidence !== undefined
        ? { confidence: current.confidence }
        : {}),
  };
  const box = validateBoundingBox(merged);
  await deps.db.query(
    `UPDATE bounding_boxes SET label = $3, x_min = $4, y_min = $5, x_max = $6, y_max = $7, confidence = $8
      WHERE id = $1 AND binary_id = $2`,
    [boxId, item.binaryDataId, box.label, box.xMin, box.yMin, box.xMax, box.yMax, box.confidence ?? null],
  );
}

export async function removeBoundingBox(
  deps: DataQueryDeps,
  principal: Principal,
  ref: BinaryDataRef,
  shownId: string,
  boxId: string,
): Promise<void> {
  if (boxId === '') throw invalidArgument('bbox_id', 'is required');
  const item = await requireBinaryItem(deps, principal, ref, shownId);
  const result = await deps.db.query('DELETE FROM bounding_boxes WHERE id = $1 AND binary_id = $2', [
    boxId,
    item.binaryDataId,
  ]);
  if (!result.rowCount) throw notFound('bounding box', boxId);
}

/** Distinct labels of the boxes on binary items the filter matches, sorted. */
export async function boundingBoxLabelsByFilter(
  deps: DataQueryDeps,
  principal: Principal,
  filter: DataFilter,
): Promise<string[]> {
  const params = createSqlParams();
  const conditions = binaryFilterConditions(principal, filter, false, params);
  if (!conditions) return [];
  const result = await deps.db.query<{ label: string }>(
    `SELECT DISTINCT bb.label FROM bounding_boxes bb JOIN binary_data b ON b.id = bb.binary_id
      WHERE ${allOf(conditions)} ORDER BY bb.label`,
    params.values,
  );
  return result.rows.map((row) => row.label);
}
