/**
 * Binary data IDs.
 *
 * DECISION: a binary item is identified by its full binary data ID `<organization_id>/<location_id>/<file_id>`
 * where `file_id` is a 24-hex ObjectId (wire-protocol §2.1). `binary_data.id` stores that FULL string, and
 * the item's blob key is the same string. Bounding boxes reference it (`bounding_boxes.binary_id`). The
 * deprecated `BinaryID{file_id, organization_id, location_id}` maps to it with `binaryDataIdOf(...)`, and
 * `upload_receipts.file_id` also holds the full ID (tabular batches get one too, with no binary row).
 * The location segment is the location at upload time; it never changes when a machine moves.
 */

export interface BinaryDataIdParts {
  organizationId: string;
  locationId: string;
  fileId: string;
}

export function binaryDataIdOf(organizationId: string, locationId: string, fileId: string): string {
  return `${organizationId}/${locationId}/${fileId}`;
}

/** Splits a full binary data ID; undefined when it is not of the form `<org>/<location>/<file>`. */
export function parseBinaryDataId(binaryDataId: string): BinaryDataIdParts | undefined {
  const parts = binaryDataId.split('/');
  if (parts.length !== 3) return undefined;
  const [organizationId, locationId, fileId] = parts as [string, string, string];
  if (!organizationId || !locationId || !fileId) return undefined;
  return { organizationId, locationId, fileId };
}

/** The last segment (the ObjectId) of a full binary data ID, or the ID itself when it has no `/`. */
export function fileIdOf(binaryDataId: string): string {
  const slash = binaryDataId.lastIndexOf('/');
  return slash === -1 ? binaryDataId : binaryDataId.slice(slash + 1);
}
