import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  isSdkRpcError,
  sdkDatasetRpcs,
  sdkTransportKinds,
  streamingDataCaptureUpload,
  structFromJson,
} from '@mcloud/sdk-testkit';
import { appApi, dataApi, type ViamClient } from '@viamrobotics/sdk';
import { createOrganizationWithOwnerKey } from '../../src/domain/fleet/organization-setup.ts';
import { withTransaction } from '../../src/infra/postgres/database.ts';
import { createMachine, fakeJpeg, type SdkCloud, startSdkCloud } from './e2e-support.ts';

/**
 * Organization A's owner key against organization B's IDs: every implemented AppService / DataService /
 * DatasetService / DataSyncService RPC that takes an ID must answer exactly as it does for a random unknown
 * ID of the same shape (same code, same message once IDs are masked, same result if it succeeds), and B's
 * state must be unchanged afterwards. Listing calls of A never show B's items.
 */

interface World {
  a: ViamClient;
  b: ViamClient;
  orgA: string;
  locA: string;
  robotA: string;
  partA: string;
  binA: string;
  dsA: string;
  orgB: string;
  locB: string;
  /** A location of B without machines (deletable). */
  locB2: string;
  locSecretB: string;
  robotB: string;
  partB: string;
  partNameB: string;
  partSecretIdB: string;
  binB: string;
  binB2: string;
  bboxB: string;
  dsB: string;
  keyB: string;
  keyBSecret: string;
}

/** A value of the same shape as `id` (UUID, location id, ObjectId, `<org>/<loc>/<file>`), almost surely unknown. */
function sameShape(id: string): string {
  const hex = '0123456789abcdef';
  const lower = 'abcdefghijklmnopqrstuvwxyz';
  const upper = lower.toUpperCase();
  return [...id]
    .map((char) => {
      if (hex.includes(char)) return hex[randomInt(hex.length)];
      if (lower.includes(char)) return lower[randomInt(lower.length)];
      if (upper.includes(char)) return upper[randomInt(upper.length)];
      return char;
    })
    .join('');
}

type Observation = { ok: true; value: string } | { ok: false; code: number; message: string };

function mask(text: string, ids: readonly string[]): string {
  let masked = text;
  for (const id of [...ids].sort((x, y) => y.length - x.length))
    if (id) masked = masked.split(id).join('<id>');
  return masked;
}

async function observe(call: () => Promise<unknown>, ids: readonly string[]): Promise<Observation> {
  try {
    const value = await call();
    const json = JSON.stringify(value ?? null, (_key, inner) =>
      typeof inner === 'bigint' ? `${inner}n` : inner,
    );
    return { ok: true, value: mask(json, ids) };
  } catch (error) {
    if (!isSdkRpcError(error)) throw error;
    return { ok: false, code: error.code, message: mask(error.rawMessage, ids) };
  }
}

interface Probe {
  name: string;
  /** The foreign IDs the call uses (B's), given the world. */
  ids: (w: World) => string[];
  /** The call, with those IDs (B's, or random look-alikes) in the same order. */
  call: (w: World, ids: string[]) => Promise<unknown>;
  /** Only over transports that can client-stream. */
  grpcOnly?: boolean;
}

const at = (second: number) => new Date(Date.now() - 3_600_000 + second * 1000);
const ownerOf = (resourceType: string, resourceId: string, organizationId: string) =>
  new appApi.Authorization({
    authorizationType: 'role',
    authorizationId: `${resourceType}_owner`,
    resourceType,
    resourceId,
    organizationId,
    identityId: '',
    identityType: 'api-key',
  });
const idList = (ids: string[]) => ids;
const first = (ids: string[]) => ids[0] as string;
const second = (ids: string[]) => ids[1] as string;

const probes: Probe[] = [
  // --- AppService: organizations
  { name: 'getOrganization', ids: (w) => [w.orgB], call: (w, i) => w.a.appClient.getOrganization(first(i)) },
  {
    name: 'updateOrganization',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.updateOrganization(first(i), 'taken-over'),
  },
  {
    name: 'deleteOrganization',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.deleteOrganization(first(i)),
  },
  {
    name: 'getOrganizationMetadata',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.getOrganizationMetadata(first(i)),
  },
  {
    name: 'updateOrganizationMetadata',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.updateOrganizationMetadata(first(i), { evil: true }),
  },
  {
    name: 'listOrganizationMembers',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.listOrganizationMembers(first(i)),
  },
  {
    name: 'createOrganizationInvite',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.createOrganizationInvite(first(i), 'mallory@example.com', [], false),
  },
  // --- locations
  { name: 'listLocations', ids: (w) => [w.orgB], call: (w, i) => w.a.appClient.listLocations(first(i)) },
  {
    name: 'createLocation',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.createLocation(first(i), 'evil'),
  },
  {
    name: 'createLocation with a foreign parent',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.createLocation(w.orgA, 'child', first(i)),
  },
  { name: 'getLocation', ids: (w) => [w.locB], call: (w, i) => w.a.appClient.getLocation(first(i)) },
  {
    name: 'updateLocation',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.updateLocation(first(i), 'evil'),
  },
  {
    name: 'updateLocation to a foreign parent',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.updateLocation(w.locA, undefined, first(i)),
  },
  { name: 'deleteLocation', ids: (w) => [w.locB2], call: (w, i) => w.a.appClient.deleteLocation(first(i)) },
  { name: 'locationAuth', ids: (w) => [w.locB], call: (w, i) => w.a.appClient.locationAuth(first(i)) },
  {
    name: 'createLocationSecret',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.createLocationSecret(first(i)),
  },
  {
    name: 'deleteLocationSecret',
    ids: (w) => [w.locB, w.locSecretB],
    call: (w, i) => w.a.appClient.deleteLocationSecret(first(i), second(i)),
  },
  {
    name: 'deleteLocationSecret (own location, foreign secret)',
    ids: (w) => [w.locSecretB],
    call: (w, i) => w.a.appClient.deleteLocationSecret(w.locA, first(i)),
  },
  {
    name: 'getLocationMetadata',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.getLocationMetadata(first(i)),
  },
  {
    name: 'updateLocationMetadata',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.updateLocationMetadata(first(i), { evil: true }),
  },
  // --- robots
  { name: 'listRobots', ids: (w) => [w.locB], call: (w, i) => w.a.appClient.listRobots(first(i)) },
  { name: 'newRobot', ids: (w) => [w.locB], call: (w, i) => w.a.appClient.newRobot(first(i), 'evil') },
  { name: 'getRobot', ids: (w) => [w.robotB], call: (w, i) => w.a.appClient.getRobot(first(i)) },
  {
    name: 'updateRobot',
    ids: (w) => [w.robotB, w.locB],
    call: (w, i) => w.a.appClient.updateRobot(first(i), second(i), 'evil'),
  },
  {
    name: 'updateRobot (move own machine into a foreign location)',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.updateRobot(w.robotA, first(i), 'moved'),
  },
  { name: 'deleteRobot', ids: (w) => [w.robotB], call: (w, i) => w.a.appClient.deleteRobot(first(i)) },
  {
    name: 'getRobotMetadata',
    ids: (w) => [w.robotB],
    call: (w, i) => w.a.appClient.getRobotMetadata(first(i)),
  },
  {
    name: 'updateRobotMetadata',
    ids: (w) => [w.robotB],
    call: (w, i) => w.a.appClient.updateRobotMetadata(first(i), { evil: true }),
  },
  { name: 'getRobotParts', ids: (w) => [w.robotB], call: (w, i) => w.a.appClient.getRobotParts(first(i)) },
  {
    name: 'newRobotPart',
    ids: (w) => [w.robotB],
    call: (w, i) => w.a.appClient.newRobotPart(first(i), 'evil'),
  },
  {
    name: 'getRobotAPIKeys',
    ids: (w) => [w.robotB],
    call: (w, i) => w.a.appClient.getRobotAPIKeys(first(i)),
  },
  // --- parts
  { name: 'getRobotPart', ids: (w) => [w.partB], call: (w, i) => w.a.appClient.getRobotPart(first(i)) },
  {
    name: 'getRobotPartByNameAndLocation',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.getRobotPartByNameAndLocation(w.partNameB, first(i)),
  },
  {
    name: 'getRobotPartHistory',
    ids: (w) => [w.partB],
    call: (w, i) => w.a.appClient.getRobotPartHistory(first(i)),
  },
  {
    name: 'updateRobotPart',
    ids: (w) => [w.partB],
    call: (w, i) => w.a.appClient.updateRobotPart(first(i), 'evil', structFromJson({ evil: true })),
  },
  { name: 'deleteRobotPart', ids: (w) => [w.partB], call: (w, i) => w.a.appClient.deleteRobotPart(first(i)) },
  { name: 'markPartAsMain', ids: (w) => [w.partB], call: (w, i) => w.a.appClient.markPartAsMain(first(i)) },
  {
    name: 'markPartForRestart',
    ids: (w) => [w.partB],
    call: (w, i) => w.a.appClient.markPartForRestart(first(i)),
  },
  {
    name: 'createRobotPartSecret',
    ids: (w) => [w.partB],
    call: (w, i) => w.a.appClient.createRobotPartSecret(first(i)),
  },
  {
    name: 'deleteRobotPartSecret',
    ids: (w) => [w.partB, w.partSecretIdB],
    call: (w, i) => w.a.appClient.deleteRobotPartSecret(first(i), second(i)),
  },
  {
    name: 'deleteRobotPartSecret (own part, foreign secret)',
    ids: (w) => [w.partSecretIdB],
    call: (w, i) => w.a.appClient.deleteRobotPartSecret(w.partA, first(i)),
  },
  {
    name: 'getRobotPartMetadata',
    ids: (w) => [w.partB],
    call: (w, i) => w.a.appClient.getRobotPartMetadata(first(i)),
  },
  {
    name: 'updateRobotPartMetadata',
    ids: (w) => [w.partB],
    call: (w, i) => w.a.appClient.updateRobotPartMetadata(first(i), { evil: true }),
  },
  // --- API keys
  {
    name: 'createKey on a foreign organization',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.appClient.createKey([ownerOf('organization', first(i), first(i))], 'evil'),
  },
  {
    name: 'createKey on a foreign machine, claimed for own organization',
    ids: (w) => [w.robotB],
    call: (w, i) => w.a.appClient.createKey([ownerOf('robot', first(i), w.orgA)], 'evil'),
  },
  {
    name: 'createKey on a foreign location, claimed for own organization',
    ids: (w) => [w.locB],
    call: (w, i) => w.a.appClient.createKey([ownerOf('location', first(i), w.orgA)], 'evil'),
  },
  { name: 'listKeys', ids: (w) => [w.orgB], call: (w, i) => w.a.appClient.listKeys(first(i)) },
  { name: 'rotateKey', ids: (w) => [w.keyB], call: (w, i) => w.a.appClient.rotateKey(first(i)) },
  {
    name: 'createKeyFromExistingKeyAuthorizations',
    ids: (w) => [w.keyB],
    call: (w, i) => w.a.appClient.createKeyFromExistingKeyAuthorizations(first(i)),
  },
  { name: 'deleteKey', ids: (w) => [w.keyB], call: (w, i) => w.a.appClient.deleteKey(first(i)) },
  // --- DataService reads
  ...(
    [
      ['organization_ids', (w: World) => [w.orgB], (i: string[]) => ({ organizationIds: idList(i) })],
      ['location_ids', (w: World) => [w.locB], (i: string[]) => ({ locationIds: idList(i) })],
      ['robot_id', (w: World) => [w.robotB], (i: string[]) => ({ robotId: first(i) })],
      ['part_id', (w: World) => [w.partB], (i: string[]) => ({ partId: first(i) })],
      ['dataset_id', (w: World) => [w.dsB], (i: string[]) => ({ datasetId: first(i) })],
    ] as const
  ).flatMap(([field, ids, filter]): Probe[] => [
    {
      name: `tabularDataByFilter by ${field}`,
      ids,
      call: (w, i) => w.a.dataClient.tabularDataByFilter(new dataApi.Filter(filter(i)), 50),
    },
    {
      name: `tabularDataByFilter count_only by ${field}`,
      ids,
      call: (w, i) =>
        w.a.dataClient.tabularDataByFilter(new dataApi.Filter(filter(i)), 50, undefined, '', true),
    },
    {
      name: `binaryDataByFilter by ${field}`,
      ids,
      call: (w, i) =>
        w.a.dataClient.binaryDataByFilter(new dataApi.Filter(filter(i)), 50, undefined, '', true),
    },
    {
      name: `binaryDataByFilter count_only by ${field}`,
      ids,
      call: (w, i) =>
        w.a.dataClient.binaryDataByFilter(new dataApi.Filter(filter(i)), 50, undefined, '', false, true),
    },
    {
      name: `tagsByFilter by ${field}`,
      ids,
      call: (w, i) => w.a.dataClient.tagsByFilter(new dataApi.Filter(filter(i))),
    },
    {
      name: `boundingBoxLabelsByFilter by ${field}`,
      ids,
      call: (w, i) => w.a.dataClient.boundingBoxLabelsByFilter(new dataApi.Filter(filter(i))),
    },
    {
      name: `addTagsToBinaryDataByFilter by ${field}`,
      ids,
      call: (w, i) => w.a.dataClient.addTagsToBinaryDataByFilter(['evil'], new dataApi.Filter(filter(i))),
    },
    {
      name: `removeTagsFromBinaryDataByFilter by ${field}`,
      ids,
      call: (w, i) =>
        w.a.dataClient.removeTagsFromBinaryDataByFilter(['b-tag'], new dataApi.Filter(filter(i))),
    },
    {
      name: `deleteBinaryDataByFilter by ${field}`,
      ids,
      call: (w, i) => w.a.dataClient.deleteBinaryDataByFilter(new dataApi.Filter(filter(i))),
    },
  ]),
  {
    name: 'binaryDataByIds',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.binaryDataByIds(idList(i), true),
  },
  {
    name: 'binaryDataByIds (own org/location prefix, foreign file id)',
    ids: (w) => [spoofed(w, w.binB)],
    call: (w, i) => w.a.dataClient.binaryDataByIds(idList(i), true),
  },
  {
    name: 'binaryDataByIds (deprecated BinaryID form)',
    ids: (w) => w.binB.split('/'),
    call: (w, i) =>
      w.a.dataClient.binaryDataByIds(
        [new dataApi.BinaryID({ organizationId: first(i), locationId: second(i), fileId: i[2] as string })],
        true,
      ),
  },
  {
    name: 'getLatestTabularData',
    ids: (w) => [w.partB],
    call: (w, i) =>
      w.a.dataClient.getLatestTabularData(first(i), 'sensor-b', 'rdk:component:sensor', 'Readings'),
  },
  {
    name: 'exportTabularData',
    ids: (w) => [w.partB],
    call: (w, i) =>
      w.a.dataClient.exportTabularData(first(i), 'sensor-b', 'rdk:component:sensor', 'Readings'),
  },
  {
    name: 'createBinaryDataSignedURL',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.createBinaryDataSignedURL(first(i), 5),
  },
  {
    name: 'createBinaryDataSignedURL (own prefix, foreign file id)',
    ids: (w) => [spoofed(w, w.binB)],
    call: (w, i) => w.a.dataClient.createBinaryDataSignedURL(first(i), 5),
  },
  // --- DataService writes
  {
    name: 'deleteTabularData',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.dataClient.deleteTabularData(first(i), 0),
  },
  {
    name: 'deleteBinaryDataByIds',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.deleteBinaryDataByIds(idList(i)),
  },
  {
    name: 'deleteBinaryDataByIds (own prefix, foreign file id)',
    ids: (w) => [spoofed(w, w.binB)],
    call: (w, i) => w.a.dataClient.deleteBinaryDataByIds(idList(i)),
  },
  {
    name: 'deleteBinaryDataByIds (own and foreign ids mixed)',
    ids: (w) => [w.binB2],
    call: (w, i) => w.a.dataClient.deleteBinaryDataByIds([first(i), sameShape(w.binA)]),
  },
  {
    name: 'addTagsToBinaryDataByIds',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.addTagsToBinaryDataByIds(['evil'], idList(i)),
  },
  {
    name: 'removeTagsFromBinaryDataByIds',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.removeTagsFromBinaryDataByIds(['b-tag'], idList(i)),
  },
  {
    name: 'addBoundingBoxToImageById',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.addBoundingBoxToImageById(first(i), 'evil', 0.1, 0.1, 0.2, 0.2),
  },
  {
    name: 'updateBoundingBox',
    ids: (w) => [w.binB, w.bboxB],
    call: (w, i) => w.a.dataClient.updateBoundingBox(first(i), second(i), 'evil', 0.1, 0.1, 0.2, 0.2),
  },
  {
    name: 'removeBoundingBoxFromImageById',
    ids: (w) => [w.binB, w.bboxB],
    call: (w, i) => w.a.dataClient.removeBoundingBoxFromImageById(first(i), second(i)),
  },
  {
    name: 'addBinaryDataToDatasetByIds (foreign item, own dataset)',
    ids: (w) => [w.binB],
    call: (w, i) => w.a.dataClient.addBinaryDataToDatasetByIds(idList(i), w.dsA),
  },
  {
    name: 'addBinaryDataToDatasetByIds (own item, foreign dataset)',
    ids: (w) => [w.dsB],
    call: (w, i) => w.a.dataClient.addBinaryDataToDatasetByIds([w.binA], first(i)),
  },
  {
    name: 'removeBinaryDataFromDatasetByIds',
    ids: (w) => [w.binB, w.dsB],
    call: (w, i) => w.a.dataClient.removeBinaryDataFromDatasetByIds([first(i)], second(i)),
  },
  // --- DatasetService
  {
    name: 'createDataset',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.dataClient.createDataset('evil', first(i)),
  },
  {
    name: 'renameDataset',
    ids: (w) => [w.dsB],
    call: (w, i) => w.a.dataClient.renameDataset(first(i), 'evil'),
  },
  { name: 'deleteDataset', ids: (w) => [w.dsB], call: (w, i) => w.a.dataClient.deleteDataset(first(i)) },
  {
    name: 'listDatasetsByOrganizationID',
    ids: (w) => [w.orgB],
    call: (w, i) => w.a.dataClient.listDatasetsByOrganizationID(first(i)),
  },
  {
    name: 'listDatasetsByIds',
    ids: (w) => [w.dsB],
    call: (w, i) => w.a.dataClient.listDatasetsByIds(idList(i)),
  },
  {
    name: 'mergeDatasets (foreign dataset into own organization)',
    ids: (w) => [w.dsB],
    call: (w, i) =>
      sdkDatasetRpcs(w.a).mergeDatasets({
        datasetIds: [w.dsA, first(i)],
        name: 'merged',
        organizationId: w.orgA,
      }),
  },
  {
    name: 'mergeDatasets (own dataset into foreign organization)',
    ids: (w) => [w.orgB],
    call: (w, i) =>
      sdkDatasetRpcs(w.a).mergeDatasets({ datasetIds: [w.dsA], name: 'merged', organizationId: first(i) }),
  },
  // --- DataSyncService
  {
    name: 'tabularDataCaptureUpload',
    ids: (w) => [w.partB],
    call: (w, i) =>
      w.a.dataClient.tabularDataCaptureUpload(
        [{ evil: 1 }],
        first(i),
        'rdk:component:sensor',
        'sensor-b',
        'Readings',
        [[at(0), at(0)]],
      ),
  },
  {
    name: 'binaryDataCaptureUpload',
    ids: (w) => [w.partB],
    call: (w, i) =>
      w.a.dataClient.binaryDataCaptureUpload(
        fakeJpeg(100, 7),
        first(i),
        'rdk:component:camera',
        'c',
        'ReadImage',
        '.jpeg',
        [at(0), at(0)],
      ),
  },
  {
    name: 'fileUpload',
    grpcOnly: true,
    ids: (w) => [w.partB],
    call: (w, i) => w.a.dataClient.fileUpload(new Uint8Array(1000), first(i), { fileExtension: '.bin' }),
  },
  {
    name: 'streamingDataCaptureUpload',
    grpcOnly: true,
    ids: (w) => [w.partB],
    call: (w, i) =>
      streamingDataCaptureUpload(w.a, fakeJpeg(200_000, 8), {
        partId: first(i),
        componentType: 'rdk:component:camera',
        componentName: 'c',
        methodName: 'ReadImage',
        fileExtension: '.jpeg',
        requestTimes: [at(0), at(0)],
      }),
  },
];

/** `<orgA>/<locA>/<file id of B>`: B's object addressed under A's own prefix. */
function spoofed(w: World, binaryDataId: string): string {
  const fileId = binaryDataId.split('/').at(-1) ?? binaryDataId;
  return `${w.orgA}/${w.locA}/${fileId}`;
}

/** Everything B can observe about its organization; must be identical before and after A's attempts. */
async function snapshotOfB(w: World): Promise<unknown> {
  const b = w.b;
  const ids = <T extends { id: string }>(items: T[]) => items.map((item) => item.id).sort();
  const binaries: { metadata?: Record<string, unknown> & { captureMetadata?: { tags: string[] } } }[] = (
    await b.dataClient.binaryDataByFilter(new dataApi.Filter({ organizationIds: [w.orgB] }), 50, 2, '', false)
  ).data;
  const parts: {
    id: string;
    name: string;
    mainPart: boolean;
    secrets: { id: string }[];
    robotConfig?: unknown;
  }[] = await b.appClient.getRobotParts(w.robotB);
  return {
    organization: (await b.appClient.getOrganization(w.orgB))?.name,
    organizationMetadata: await b.appClient.getOrganizationMetadata(w.orgB),
    locations: (await b.appClient.listLocations(w.orgB)).map(
      (l: { id: string; name: string; parentLocationId: string }) => [l.id, l.name, l.parentLocationId],
    ),
    locationSecrets: ids((await b.appClient.locationAuth(w.locB))?.secrets ?? []),
    locationMetadata: await b.appClient.getLocationMetadata(w.locB),
    robots: (await b.appClient.listRobots(w.locB)).map(
      (r: { id: string; name: string; location: string }) => [r.id, r.name, r.location],
    ),
    robotMetadata: await b.appClient.getRobotMetadata(w.robotB),
    parts: parts.map((p) => [p.id, p.name, p.mainPart, ids(p.secrets)]),
    partConfig: (await b.appClient.getRobotPart(w.partB)).configJson,
    partHistory: (await b.appClient.getRobotPartHistory(w.partB)).length,
    partMetadata: await b.appClient.getRobotPartMetadata(w.partB),
    keys: (await b.appClient.listKeys(w.orgB))
      .map((k: { apiKey?: { id: string; name: string } }) => `${k.apiKey?.id}:${k.apiKey?.name}`)
      .sort(),
    readings: (
      await b.dataClient.tabularDataByFilter(new dataApi.Filter({ organizationIds: [w.orgB] }), 50, 2)
    ).data.map((r: { data: unknown }) => r.data),
    binaries: binaries.map((item) => {
      const m = item.metadata as {
        binaryDataId: string;
        captureMetadata?: { tags: string[] };
        annotations?: { bboxes: { id: string; label: string; xMinNormalized: number }[] };
        datasetIds: string[];
      };
      return {
        id: m.binaryDataId,
        tags: [...(m.captureMetadata?.tags ?? [])].sort(),
        bboxes: (m.annotations?.bboxes ?? []).map((box) => [box.id, box.label, box.xMinNormalized]),
        datasets: [...m.datasetIds].sort(),
      };
    }),
    datasets: (await b.dataClient.listDatasetsByOrganizationID(w.orgB)).map(
      (d: { id: string; name: string }) => [d.id, d.name],
    ),
  };
}

for (const transport of sdkTransportKinds) {
  describe(`organization isolation over ${transport}`, { timeout: 180_000 }, () => {
    let cloud: SdkCloud;
    const w = {} as World;
    let before_: unknown;

    before(async () => {
      cloud = await startSdkCloud(transport);
      w.a = cloud.client;
      w.orgA = cloud.organizationId;
      w.locA = cloud.locationId;
      const created = await withTransaction(cloud.testCloud.cloud.deps.db, (client) =>
        createOrganizationWithOwnerKey(client, { name: 'org-b', locationName: 'b-site' }),
      );
      w.orgB = created.organizationId;
      w.locB = created.locationId;
      w.b = await cloud.clientFor(created.apiKeyId, created.apiKey);

      // Organization A's own things (needed as the "own" half of mixed calls).
      const machineA = await createMachine(cloud, w.locA, 'a-rover');
      w.robotA = machineA.robotId;
      w.partA = machineA.partId;
      w.binA = await w.a.dataClient.binaryDataCaptureUpload(
        fakeJpeg(200, 1),
        w.partA,
        'rdk:component:camera',
        'cam-a',
        'ReadImage',
        '.jpeg',
        [at(1), at(1)],
        ['a-tag'],
      );
      w.dsA = await w.a.dataClient.createDataset('a-set', w.orgA);

      // Organization B's things, made by B.
      w.locB2 = (await w.b.appClient.createLocation(w.orgB, 'b-empty')).id;
      w.locSecretB = (await w.b.appClient.locationAuth(w.locB)).secrets[0].id;
      w.robotB = await w.b.appClient.newRobot(w.locB, 'b-rover');
      const [partB] = await w.b.appClient.getRobotParts(w.robotB);
      w.partB = partB.id;
      w.partNameB = partB.name;
      w.partSecretIdB = partB.secrets[0].id;
      await w.b.appClient.updateRobotPart(
        w.partB,
        w.partNameB,
        structFromJson({ components: [{ name: 'b' }] }),
      );
      await w.b.appClient.updateRobotPartMetadata(w.partB, { owner: 'b' });
      await w.b.appClient.updateRobotMetadata(w.robotB, { owner: 'b' });
      await w.b.appClient.updateLocationMetadata(w.locB, { owner: 'b' });
      await w.b.appClient.updateOrganizationMetadata(w.orgB, { owner: 'b' });
      await w.b.dataClient.tabularDataCaptureUpload(
        [{ readings: { b: 1 } }, { readings: { b: 2 } }],
        w.partB,
        'rdk:component:sensor',
        'sensor-b',
        'Readings',
        [
          [at(2), at(2)],
          [at(3), at(3)],
        ],
        ['b-tag'],
      );
      w.binB = await w.b.dataClient.binaryDataCaptureUpload(
        fakeJpeg(300, 2),
        w.partB,
        'rdk:component:camera',
        'cam-b',
        'ReadImage',
        '.jpeg',
        [at(4), at(4)],
        ['b-tag'],
      );
      w.binB2 = await w.b.dataClient.binaryDataCaptureUpload(
        fakeJpeg(400, 3),
        w.partB,
        'rdk:component:camera',
        'cam-b',
        'ReadImage',
        '.jpeg',
        [at(5), at(5)],
        ['b-tag'],
      );
      w.bboxB = await w.b.dataClient.addBoundingBoxToImageById(w.binB, 'b-label', 0.1, 0.1, 0.4, 0.4);
      w.dsB = await w.b.dataClient.createDataset('b-set', w.orgB);
      await w.b.dataClient.addBinaryDataToDatasetByIds([w.binB], w.dsB);
      const keyB = await w.b.appClient.createKey([ownerOf('organization', w.orgB, w.orgB)], 'b-key');
      w.keyB = keyB.id;
      w.keyBSecret = keyB.key;
      before_ = await snapshotOfB(w);
    });
    after(async () => {
      await cloud?.stop();
    });

    for (const probe of probes) {
      if (probe.grpcOnly && transport !== 'grpc') continue;
      test(`${probe.name}: a foreign ID answers like an unknown one`, async () => {
        const foreign = probe.ids(w);
        const fresh = foreign.map(sameShape);
        const foreignOutcome = await observe(() => probe.call(w, foreign), foreign);
        const freshOutcome = await observe(() => probe.call(w, fresh), fresh);
        if (process.env.MCLOUD_E2E_DEBUG)
          console.log(`[${transport}] ${probe.name}: ${JSON.stringify(foreignOutcome)}`);
        assert.deepEqual(
          foreignOutcome,
          freshOutcome,
          `B's IDs ${JSON.stringify(foreign)} must be indistinguishable from unknown ones`,
        );
      });
    }

    test("A's listing calls never show B's items", async () => {
      const a = w.a;
      const orgs: { id: string }[] = await a.appClient.listOrganizations();
      assert.deepEqual(
        orgs.map((o) => o.id),
        [w.orgA],
      );
      const locations: { id: string }[] = await a.appClient.listLocations(w.orgA);
      assert.ok(!locations.some((l) => l.id === w.locB || l.id === w.locB2));
      const keys: { apiKey?: { id: string } }[] = await a.appClient.listKeys(w.orgA);
      assert.ok(!keys.some((k) => k.apiKey?.id === w.keyB));
      const robotKeys: { apiKey?: { id: string } }[] = await a.appClient.getRobotAPIKeys(w.robotA);
      assert.ok(!robotKeys.some((k) => k.apiKey?.id === w.keyB));
      const datasets: { id: string }[] = await a.dataClient.listDatasetsByOrganizationID(w.orgA);
      assert.ok(!datasets.some((d) => d.id === w.dsB));
      const tabular: { metadata?: { organizationId: string } }[] = (
        await a.dataClient.tabularDataByFilter(undefined, 100)
      ).data;
      assert.ok(tabular.every((r) => r.metadata?.organizationId === w.orgA));
      const binary: { metadata?: { binaryDataId: string; captureMetadata?: { organizationId: string } } }[] =
        (await a.dataClient.binaryDataByFilter(undefined, 100, undefined, '', false)).data;
      assert.deepEqual(
        binary.map((item) => item.metadata?.binaryDataId),
        [w.binA],
      );
      const binaryCount = await a.dataClient.binaryDataByFilter(undefined, 100, undefined, '', false, true);
      assert.equal(binaryCount.count, 1n);
      const tags: string[] = await a.dataClient.tagsByFilter();
      assert.ok(!tags.includes('b-tag'), `tags: ${tags}`);
      const labels: string[] = await a.dataClient.boundingBoxLabelsByFilter();
      assert.ok(!labels.includes('b-label'), `labels: ${labels}`);
      assert.equal(
        await a.dataClient.getLatestTabularData(w.partA, 'sensor-b', 'rdk:component:sensor', 'Readings'),
        null,
      );
    });

    test("B's organization is unchanged and B's key still works", async () => {
      assert.deepEqual(await snapshotOfB(w), before_);
      const keyClient = await cloud.clientFor(w.keyB, w.keyBSecret);
      assert.deepEqual(
        (await keyClient.appClient.listOrganizations()).map((o: { id: string }) => o.id),
        [w.orgB],
      );
      const [image]: { binary: Uint8Array }[] = await w.b.dataClient.binaryDataByIds([w.binB], true);
      assert.equal(image?.binary.length, 300);
    });
  });
}
