import type { Queryable } from '../../../infra/postgres/database.ts';
import { requireRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { isUuid } from '../../validate.ts';

/** Where an upload lands: the part and its machine, location and organization. */
export interface UploadPart {
  partId: string;
  robotId: string;
  locationId: string;
  organizationId: string;
}

// Part placements are cached as briefly as principals are, so a moved machine is seen within a second.
const partCacheTtlMs = 1_000;
const partCacheMaxEntries = 10_000;
const partCaches = new WeakMap<object, Map<string, { part: UploadPart | undefined; expiresAtMs: number }>>();

async function loadPart(db: Queryable, partId: string): Promise<UploadPart | undefined> {
  const result = await db.query<{
    id: string;
    robot_id: string;
    location_id: string;
    organization_id: string;
  }>(
    'SELECT p.id, p.robot_id, r.location_id, p.organization_id FROM robot_parts p JOIN robots r ON r.id = p.robot_id WHERE p.id = $1',
    [partId],
  );
  const row = result.rows[0];
  return (
    row && {
      partId: row.id,
      robotId: row.robot_id,
      locationId: row.location_id,
      organizationId: row.organization_id,
    }
  );
}

async function cachedPart(db: Queryable, clock: Clock, partId: string): Promise<UploadPart | undefined> {
  let cache = partCaches.get(db);
  if (!cache) {
    cache = new Map();
    partCaches.set(db, cache);
  }
  const now = clock.nowMs();
  const hit = cache.get(partId);
  if (hit && hit.expiresAtMs > now) return hit.part;
  const part = await loadPart(db, partId);
  if (cache.size >= partCacheMaxEntries) cache.clear();
  cache.set(partId, { part, expiresAtMs: now + partCacheTtlMs });
  return part;
}

function partNotFound(field: string, partId: string): DomainError {
  return new DomainError('NotFound', `${field}: part ${JSON.stringify(partId)} not found`);
}

/**
 * Resolves the upload's part and checks the caller may write data for it: a machine's own credentials
 * only for that part; an API key needs the operator role on the part's machine, location or organization.
 * Unknown parts and parts the caller cannot see both answer NotFound (naming `part_id`).
 */
export async function resolveUploadPart(
  deps: { db: Queryable; clock: Clock },
  principal: Principal,
  partIdInput: string,
  field = 'metadata.part_id',
): Promise<UploadPart> {
  const partId = partIdInput.trim().toLowerCase();
  if (partId === '') throw invalidArgument(field, 'is required');
  if (!isUuid(partId)) throw invalidArgument(field, 'must be a part ID (a UUID)', partIdInput);
  if (principal.kind === 'part') {
    if (principal.partId !== partId) throw partNotFound(field, partId);
    return {
      partId,
      robotId: principal.robotId,
      locationId: principal.locationId,
      organizationId: principal.organizationId,
    };
  }
  const part = await cachedPart(deps.db, deps.clock, partId);
  if (!part) throw partNotFound(field, partId);
  try {
    requireRole(principal, part, 'operator', { what: 'part', id: partId });
  } catch (error) {
    if (error instanceof DomainError && error.code === 'NotFound') throw partNotFound(field, partId);
    throw error;
  }
  return part;
}
