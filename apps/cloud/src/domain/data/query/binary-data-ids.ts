import { invalidArgument } from '../../errors.ts';
import { binaryDataIdOf as joinBinaryDataId } from '../ingest/binary-data-id.ts';

/**
 * A reference to one binary item: its full binary data ID `<organization_id>/<location_id>/<file_id>`,
 * which is what `binary_data.id` stores (see ingest/binary-data-id.ts). The deprecated
 * `BinaryID{file_id, organization_id, location_id}` carries the same three parts.
 */
export interface BinaryDataRef {
  binaryDataId: string;
}

export interface LegacyBinaryId {
  fileId: string;
  organizationId: string;
  locationId: string;
}

export const maxIdsPerRequest = 1000;

const segmentPattern = /^[A-Za-z0-9_-]{1,128}$/;
const idForm = 'must have the form <organization_id>/<location_id>/<file_id>';

export function binaryDataIdOf(item: { organizationId: string; locationId: string; fileId: string }): string {
  return joinBinaryDataId(item.organizationId, item.locationId, item.fileId);
}

export function parseBinaryDataId(field: string, value: string): BinaryDataRef {
  if (value === '') throw invalidArgument(field, 'is required');
  const parts = value.split('/');
  if (parts.length !== 3 || !parts.every((part) => segmentPattern.test(part)))
    throw invalidArgument(field, idForm, value);
  const [organizationId, locationId, fileId] = parts as [string, string, string];
  return {
    binaryDataId: binaryDataIdOf({ organizationId: organizationId.toLowerCase(), locationId, fileId }),
  };
}

export function refFromLegacy(field: string, id: LegacyBinaryId): BinaryDataRef {
  const checks = [
    ['file_id', id.fileId],
    ['organization_id', id.organizationId],
    ['location_id', id.locationId],
  ] as const;
  for (const [name, value] of checks) {
    if (value === '') throw invalidArgument(`${field}.${name}`, 'is required');
    if (!segmentPattern.test(value)) throw invalidArgument(`${field}.${name}`, 'is not a valid ID', value);
  }
  return { binaryDataId: binaryDataIdOf({ ...id, organizationId: id.organizationId.toLowerCase() }) };
}

/**
 * The references of a request that has both `binary_data_ids` and the deprecated `binary_ids`.
 * At least one ID is required; at most `maxIdsPerRequest`.
 */
export function collectBinaryRefs(
  ids: readonly string[],
  legacy: readonly LegacyBinaryId[],
  names: { ids: string; legacy: string },
): BinaryDataRef[] {
  const total = ids.length + legacy.length;
  if (total === 0) throw invalidArgument(names.ids, 'must contain at least one binary data ID');
  if (total > maxIdsPerRequest)
    throw invalidArgument(names.ids, `must contain at most ${maxIdsPerRequest} IDs`, total);
  return [
    ...ids.map((id, index) => parseBinaryDataId(`${names.ids}[${index}]`, id)),
    ...legacy.map((id, index) => refFromLegacy(`${names.legacy}[${index}]`, id)),
  ];
}
