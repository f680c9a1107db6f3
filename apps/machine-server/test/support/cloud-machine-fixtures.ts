/** A machine part in a real test cloud, and helpers to change its configuration through AppService. */
import type { JsonObject } from '@bufbuild/protobuf';
import { type AuthedClients, createAuthedClients } from '@mcloud/cloud/testing';

export interface CloudPart {
  readonly owner: AuthedClients;
  readonly robotId: string;
  readonly partId: string;
  readonly partName: string;
  readonly secret: string;
}

/** Any running cloud: a TestCloud, or the benchmarks' cloud process. */
export interface CloudAddress {
  readonly url: string;
  readonly bootstrap: { readonly api_key_id: string; readonly api_key: string; readonly location_id: string };
}

export async function createCloudPart(t: CloudAddress, name: string): Promise<CloudPart> {
  const owner = await createAuthedClients(t.url, { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key });
  const { id: robotId } = await owner.app.newRobot({ name, location: t.bootstrap.location_id });
  const { parts } = await owner.app.getRobotParts({ robotId });
  const main = parts.find((part) => part.mainPart);
  if (!main) throw new Error('the new machine has no main part');
  return { owner, robotId, partId: main.id, partName: main.name, secret: main.secret };
}

export async function setPartConfig(part: CloudPart, config: JsonObject): Promise<void> {
  await part.owner.app.updateRobotPart({ id: part.partId, name: part.partName, robotConfig: config });
}

/** The credentials file a machine-server starts with. */
export function credentialsFile(url: string, part: CloudPart, refreshInterval = '15s'): object {
  return {
    cloud: { app_address: url, id: part.partId, secret: part.secret, refresh_interval: refreshInterval },
  };
}

/** N fake sensors named `<prefix>0..N-1` (configs for tests and benchmarks). */
export function fakeSensors(count: number, prefix = 's'): JsonObject[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}${i}`,
    api: 'rdk:component:sensor',
    model: 'fake',
  }));
}
