import { randomUUID } from 'node:crypto';
import { createSdkClient, type SdkTransportKind } from '@mcloud/sdk-testkit';
import type { ViamClient } from '@viamrobotics/sdk';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

/** A fresh test cloud plus an SDK client with its bootstrap (organization-owner) key. */
export interface SdkCloud {
  testCloud: TestCloud;
  client: ViamClient;
  organizationId: string;
  locationId: string;
  transport: SdkTransportKind;
  /** Another SDK client with the given key, over the same transport. */
  clientFor(apiKeyId: string, apiKey: string): Promise<ViamClient>;
  stop(): Promise<void>;
}

export async function startSdkCloud(transport: SdkTransportKind): Promise<SdkCloud> {
  const testCloud = await startTestCloud();
  const { bootstrap, url } = testCloud;
  const clientFor = (apiKeyId: string, apiKey: string) =>
    createSdkClient({ url, apiKeyId, apiKey, transport });
  try {
    const client = await clientFor(bootstrap.api_key_id, bootstrap.api_key);
    return {
      testCloud,
      client,
      organizationId: bootstrap.organization_id,
      locationId: bootstrap.location_id,
      transport,
      clientFor,
      stop: () => testCloud.stop(),
    };
  } catch (error) {
    await testCloud.stop();
    throw error;
  }
}

export function randomId(): string {
  return randomUUID();
}

/** Retries `check` until it stops throwing or the deadline passes (for effects with a bounded delay). */
export async function eventually<T>(
  check: () => Promise<T>,
  timeoutMs = 5_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

/** Distinct bytes that look like a JPEG to anyone sniffing the header. */
export function fakeJpeg(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 17) & 0xff;
  bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
  return bytes;
}

// The SDK's declaration files use extension-less relative imports, which `moduleResolution: nodenext`
// cannot follow, so most SDK return types reach us as `any`. These are the shapes the tests rely on.
export interface Named {
  id: string;
  name: string;
}
export interface JsonStruct {
  toJson(): unknown;
}
export interface HistoryEntry {
  part: string;
  robot: string;
  when?: unknown;
  old?: { robotConfig?: JsonStruct };
}
export interface KeyEntry {
  apiKey?: { id: string; name: string };
  authorizations: { authorizationId: string; resourceType: string; resourceId: string }[];
}
