import { createHash } from 'node:crypto';
import type { Queryable } from '../../../infra/postgres/database.ts';
import type { JsonObject, JsonValue } from './upload-types.ts';

/** The metadata every reading of one upload shares (one `capture_sources` row). */
export interface CaptureSource {
  organizationId: string;
  locationId: string;
  robotId: string;
  partId: string;
  componentType: string;
  componentName: string;
  methodName: string;
  methodParameters: JsonObject;
  tags: readonly string[];
}

/** JSON with object keys sorted, so equal metadata always hashes equal. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key] as JsonValue)}`).join(',')}}`;
}

/** Placement, component and method of a source, in the order of the table's columns. */
function placementColumns(source: CaptureSource): string[] {
  return [
    source.organizationId,
    source.locationId,
    source.robotId,
    source.partId,
    source.componentType,
    source.componentName,
    source.methodName,
  ];
}

/** SHA-256 over the source's identity (placement, component, method, parameters, tags). */
export function captureSourceHash(source: CaptureSource): Buffer {
  return createHash('sha256')
    .update(canonicalJson([...placementColumns(source), source.methodParameters, [...source.tags]]))
    .digest();
}

// Source IDs never change once created, so the cache needs no expiry; it is only bounded in size.
const cacheMaxEntries = 100_000;
const sourceCaches = new WeakMap<object, Map<string, string>>();

/**
 * The ID of the capture source row for this metadata, created on first use. Race-safe: concurrent
 * creators meet at the unique (organization_id, source_hash) constraint and all read the one row.
 */
export async function findOrCreateCaptureSource(
  db: Queryable,
  source: CaptureSource,
  hash = captureSourceHash(source),
): Promise<string> {
  let cache = sourceCaches.get(db);
  if (!cache) {
    cache = new Map();
    sourceCaches.set(db, cache);
  }
  const cacheKey = `${source.organizationId}:${hash.toString('base64')}`;
  const cached = cache.get(cacheKey);
  if (cached !== undefined) return cached;
  const query = () =>
    db.query<{ id: string }>(
      `WITH inserted AS (
       INSERT INTO capture_sources (organization_id, location_id, robot_id, part_id, component_type, component_name,
                                    method_name, method_parameters, tags, source_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::text[], $10)
       ON CONFLICT (organization_id, source_hash) DO NOTHING
       RETURNING id
     )
     SELECT id::text AS id FROM inserted
     UNION ALL
     SELECT id::text FROM capture_sources WHERE organization_id = $1 AND source_hash = $10
     LIMIT 1`,
      [...placementColumns(source), JSON.stringify(source.methodParameters), [...source.tags], hash],
    );
  // A creator racing us may commit after this statement's snapshot was taken: the INSERT then does
  // nothing and the SELECT cannot see the row yet. A second statement has a fresh snapshot and sees it.
  const id = (await query()).rows[0]?.id ?? (await query()).rows[0]?.id;
  if (id === undefined) throw new Error('capture source neither inserted nor found');
  if (cache.size >= cacheMaxEntries) cache.clear();
  cache.set(cacheKey, id);
  return id;
}
