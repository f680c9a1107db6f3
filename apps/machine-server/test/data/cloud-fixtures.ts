/** A real cloud, a machine part in it, and the reads the data tests check uploads with. */
import { toJson } from '@bufbuild/protobuf';
import { anyUnpack, ValueSchema } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import {
  type AuthedClients,
  createAuthedClients,
  ownerCredentials,
  type TestCloud,
} from '@mcloud/cloud/testing';
import { dataSyncPb } from '@mcloud/protocol';
import { type CloudConnection, createCloudConnection } from '../../src/cloud/cloud-connection.ts';
import type { UploadTarget } from '../../src/data/capture-file-upload.ts';

export interface MachinePart {
  owner: AuthedClients;
  robotId: string;
  partId: string;
  secret: string;
}

/** A new machine (and its main part) made through AppService with the bootstrap owner key. */
export async function createMachinePart(t: TestCloud, name = `machine-${Date.now()}`): Promise<MachinePart> {
  const owner = await createAuthedClients(t.url, ownerCredentials(t));
  const { id: robotId } = await owner.app.newRobot({ name, location: t.bootstrap.location_id });
  const { parts } = await owner.app.getRobotParts({ robotId });
  const main = parts[0];
  if (!main) throw new Error('NewRobot made no main part');
  return { owner, robotId, partId: main.id, secret: main.secret };
}

/** The machine's own authenticated connection (part secret) to `url` and the upload target on it. */
export function machineUploadTarget(
  url: string,
  part: MachinePart,
): { connection: CloudConnection; target: UploadTarget } {
  const connection = createCloudConnection({
    appAddress: url,
    credentials: { partId: part.partId, secret: part.secret },
  });
  return {
    connection,
    target: { client: createClient(dataSyncPb.DataSyncService, connection.transport), partId: part.partId },
  };
}

/** Every tabular reading stored for `componentName` (all pages), oldest first. */
export async function tabularReadings(owner: AuthedClients, partId: string, componentName: string) {
  const all: { data: Record<string, unknown>; tags: string[]; methodParameters: unknown }[] = [];
  let last = '';
  for (;;) {
    const page = await owner.data.tabularDataByFilter({
      dataRequest: { filter: { componentName, partId }, limit: 1000n, last },
    });
    for (const entry of page.data) {
      const metadata = page.metadata[entry.metadataIndex];
      all.push({
        data: (entry.data ?? {}) as Record<string, unknown>,
        tags: metadata?.tags ?? [],
        methodParameters: Object.fromEntries(
          Object.entries(metadata?.methodParameters ?? {}).map(([key, any]) => {
            const value = anyUnpack(any, ValueSchema);
            return [key, value ? toJson(ValueSchema, value) : any];
          }),
        ),
      });
    }
    if (page.data.length === 0 || page.last === '' || page.last === last) return all;
    last = page.last;
  }
}

/** Every binary item stored for `componentName` (with its bytes). */
export async function binaryItems(owner: AuthedClients, partId: string, componentName: string) {
  const all: { binary: Uint8Array; fileExt: string; mimeType: string; tags: string[]; fileName: string }[] =
    [];
  let last = '';
  for (;;) {
    const page = await owner.data.binaryDataByFilter({
      dataRequest: { filter: { componentName, partId }, limit: 100n, last },
      includeBinary: true,
    });
    for (const item of page.data) {
      all.push({
        binary: item.binary,
        fileExt: item.metadata?.fileExt ?? '',
        mimeType: item.metadata?.captureMetadata?.mimeType ?? '',
        tags: item.metadata?.captureMetadata?.tags ?? [],
        fileName: item.metadata?.fileName ?? '',
      });
    }
    if (page.data.length === 0 || page.last === '' || page.last === last) return all;
    last = page.last;
  }
}
