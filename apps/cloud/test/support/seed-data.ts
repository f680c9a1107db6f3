import { randomUUID } from 'node:crypto';
import type { RunningCloud } from '../../src/cloud-app.ts';
import { generateSecret, hashSecret } from '../../src/domain/auth/secrets.ts';
import { binaryDataIdOf } from '../../src/domain/data/ingest/binary-data-id.ts';
import { findOrCreateCaptureSource } from '../../src/domain/data/ingest/capture-sources.ts';
import { ensureReadingPartitions, monthIndexOf } from '../../src/domain/data/ingest/reading-partitions.ts';
import { createOrganizationWithOwnerKey } from '../../src/domain/fleet/organization-setup.ts';
import { newLocationId, newObjectId } from '../../src/domain/shared/ids.ts';
import { withTransaction } from '../../src/infra/postgres/database.ts';

/**
 * Test fixtures for the data plane, written straight into the tables the ingest path fills (same
 * capture-source and partition helpers), so tests control capture times, tags and placement exactly.
 */

export interface SeedPart {
  organizationId: string;
  locationId: string;
  robotId: string;
  robotName: string;
  partId: string;
  partName: string;
  partSecret: string;
}

export async function createOrganization(
  cloud: RunningCloud,
  name = 'org',
): Promise<{ organizationId: string; locationId: string; keyId: string; key: string }> {
  const created = await withTransaction(cloud.deps.db, (client) =>
    createOrganizationWithOwnerKey(client, { name }),
  );
  return {
    organizationId: created.organizationId,
    locationId: created.locationId,
    keyId: created.apiKeyId,
    key: created.apiKey,
  };
}

export async function createLocation(
  cloud: RunningCloud,
  organizationId: string,
  name = 'loc',
): Promise<string> {
  const id = newLocationId();
  await cloud.deps.db.query('INSERT INTO locations (id, organization_id, name) VALUES ($1, $2, $3)', [
    id,
    organizationId,
    name,
  ]);
  return id;
}

/** A machine with one main part (and a part secret) in the location. */
export async function createPart(
  cloud: RunningCloud,
  place: { organizationId: string; locationId: string },
  names: { robotName: string; partName?: string },
): Promise<SeedPart> {
  const robotId = randomUUID();
  const partId = randomUUID();
  const partName = names.partName ?? `${names.robotName}-main`;
  const partSecret = generateSecret();
  const db = cloud.deps.db;
  await db.query('INSERT INTO robots (id, organization_id, location_id, name) VALUES ($1, $2, $3, $4)', [
    robotId,
    place.organizationId,
    place.locationId,
    names.robotName,
  ]);
  await db.query(
    `INSERT INTO robot_parts (id, organization_id, location_id, robot_id, name, dns_name, main_part)
     VALUES ($1, $2, $3, $4, $5, $6, true)`,
    [partId, place.organizationId, place.locationId, robotId, partName, `${partId}.local`],
  );
  await db.query('INSERT INTO part_secrets (id, organization_id, part_id, secret) VALUES ($1, $2, $3, $4)', [
    randomUUID(),
    place.organizationId,
    partId,
    partSecret,
  ]);
  return { ...place, robotId, robotName: names.robotName, partId, partName, partSecret };
}

/** An API key with one operator grant on an organization, location or machine. */
export async function createScopedKey(
  cloud: RunningCloud,
  organizationId: string,
  grant: {
    resourceType: 'organization' | 'location' | 'robot';
    resourceId: string;
    role?: 'owner' | 'operator';
  },
): Promise<{ keyId: string; key: string }> {
  const keyId = randomUUID();
  const key = generateSecret();
  await cloud.deps.db.query(
    'INSERT INTO api_keys (id, organization_id, name, secret_hash) VALUES ($1, $2, $3, $4)',
    [keyId, organizationId, `key-${keyId.slice(0, 8)}`, hashSecret(key)],
  );
  await cloud.deps.db.query(
    `INSERT INTO authorizations (organization_id, identity_type, identity_id, role, resource_type, resource_id)
     VALUES ($1, 'api-key', $2, $3, $4, $5)`,
    [organizationId, keyId, grant.role ?? 'operator', grant.resourceType, grant.resourceId],
  );
  return { keyId, key };
}

export interface SeedSource {
  componentType?: string;
  componentName?: string;
  methodName?: string;
  methodParameters?: Record<string, unknown>;
  tags?: string[];
}

/** Readings of one capture source; `capturedAtMs` becomes time_received (time_requested 10 ms earlier). */
export async function seedReadings(
  cloud: RunningCloud,
  part: SeedPart,
  source: SeedSource,
  readings: readonly { capturedAtMs: number; data: Record<string, unknown>; syncedAtMs?: number }[],
): Promise<string> {
  const db = cloud.deps.db;
  const sourceId = await findOrCreateCaptureSource(db, {
    organizationId: part.organizationId,
    locationId: part.locationId,
    robotId: part.robotId,
    partId: part.partId,
    componentType: source.componentType ?? 'rdk:component:sensor',
    componentName: source.componentName ?? 'sensor-1',
    methodName: source.methodName ?? 'Readings',
    methodParameters: (source.methodParameters ?? {}) as never,
    tags: source.tags ?? [],
  });
  await ensureReadingPartitions(db, new Set(readings.map((reading) => monthIndexOf(reading.capturedAtMs))));
  await db.query(
    `INSERT INTO readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data)
     SELECT $1, $2, t, t - interval '10 milliseconds', t, s, length(d::text), d
       FROM unnest($3::timestamptz[], $4::timestamptz[], $5::jsonb[]) AS u(t, s, d)`,
    [
      part.organizationId,
      sourceId,
      readings.map((reading) => new Date(reading.capturedAtMs)),
      readings.map((reading) => new Date(reading.syncedAtMs ?? reading.capturedAtMs + 1000)),
      readings.map((reading) => JSON.stringify(reading.data)),
    ],
  );
  return sourceId;
}

export interface SeedBinary extends SeedSource {
  capturedAtMs: number;
  bytes?: Uint8Array;
  mimeType?: string;
  fileExt?: string;
  fileName?: string;
  datasetIds?: string[];
  internal?: boolean;
  boxes?: { label: string; xMin: number; yMin: number; xMax: number; yMax: number; confidence?: number }[];
}

/** One binary item with its blob; returns the binary data ID. */
export async function seedBinary(cloud: RunningCloud, part: SeedPart, item: SeedBinary): Promise<string> {
  const fileId = newObjectId(item.capturedAtMs);
  const id = binaryDataIdOf(part.organizationId, part.locationId, fileId);
  const bytes = item.bytes ?? new TextEncoder().encode(`image ${fileId}`);
  const stored = await cloud.deps.blobs.put(id, bytes);
  await cloud.deps.db.query(
    `INSERT INTO binary_data (id, organization_id, location_id, robot_id, part_id, component_type, component_name,
       method_name, method_parameters, file_name, file_ext, mime_type, tags, dataset_ids, captured_at, time_requested,
       time_received, synced_at, size_bytes, sha256, blob_key, internal)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13::text[], $14::text[], $15, $15, $15, $15, $16, $17, $1, $18)`,
    [
      id,
      part.organizationId,
      part.locationId,
      part.robotId,
      part.partId,
      item.componentType ?? 'rdk:component:camera',
      item.componentName ?? 'camera-1',
      item.methodName ?? 'ReadImage',
      JSON.stringify(item.methodParameters ?? {}),
      item.fileName ?? '',
      item.fileExt ?? '.jpg',
      item.mimeType ?? 'image/jpeg',
      item.tags ?? [],
      item.datasetIds ?? [],
      new Date(item.capturedAtMs),
      stored.sizeBytes,
      stored.sha256Hex,
      item.internal ?? false,
    ],
  );
  for (const box of item.boxes ?? []) {
    await cloud.deps.db.query(
      `INSERT INTO bounding_boxes (id, organization_id, binary_id, label, x_min, y_min, x_max, y_max, confidence)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        newObjectId(),
        part.organizationId,
        id,
        box.label,
        box.xMin,
        box.yMin,
        box.xMax,
        box.yMax,
        box.confidence ?? null,
      ],
    );
  }
  return id;
}

/**
 * The two organizations isolation tests compare: a machine in the bootstrap organization ("own") and one
 * in a new organization named `names.foreignOrganization` ("foreign", with that organization's owner key).
 */
export async function createOwnAndForeignParts(
  t: { cloud: RunningCloud; bootstrap: { organization_id: string; location_id: string } },
  names: { own: string; foreign: string; foreignOrganization: string },
): Promise<{ own: SeedPart; foreign: SeedPart; foreignKey: { keyId: string; key: string } }> {
  const own = await createPart(
    t.cloud,
    { organizationId: t.bootstrap.organization_id, locationId: t.bootstrap.location_id },
    { robotName: names.own },
  );
  const organization = await createOrganization(t.cloud, names.foreignOrganization);
  const foreign = await createPart(t.cloud, organization, { robotName: names.foreign });
  return { own, foreign, foreignKey: { keyId: organization.keyId, key: organization.key } };
}
