/**
 * End-to-end test harness: one real test cloud per test file and the machine-server processes a test
 * starts against it, all stopped after the file; plus reading a machine's URL from its "serving" line
 * and dialling it with the real SDK.
 */
import { after } from 'node:test';
import type { JsonObject } from '@bufbuild/protobuf';
import { startTestCloud, type TestCloud } from '@mcloud/cloud/testing';
import { createSdkRobotClient, type SdkTransportKind } from '@mcloud/sdk-testkit';
import type { Credential, RobotClient } from '@viamrobotics/sdk';
import { type CloudPart, createCloudPart, credentialsFile, setPartConfig } from './cloud-machine-fixtures.ts';
import { type MachineProcess, type StartMachineOptions, startMachineProcess } from './machine-process.ts';

export interface PartMachineOptions extends Omit<StartMachineOptions, 'config'> {
  /** `cloud.refresh_interval` of the credentials file: default 15s; `null` leaves it out (the machine's default). */
  readonly refreshInterval?: string | null;
  /** `network.bind_address` (default: 127.0.0.1:0, see startMachineProcess). */
  readonly bindAddress?: string;
}

export interface CloudForMachines {
  /** The cloud of this test file, started by the first call (hook order does not matter). */
  cloud(): Promise<TestCloud>;
  /** Starts a machine-server process, stopped and cleaned up after the file. */
  startMachine(options: StartMachineOptions): Promise<MachineProcess>;
  /** A new machine in the test organization whose main part has `config`. */
  createPart(name: string, config: JsonObject): Promise<CloudPart>;
  /** `startMachine` with the credentials file of `part` (it boots from the cloud). */
  startPartMachine(part: CloudPart, options?: PartMachineOptions): Promise<MachineProcess>;
}

/** Registers the file's `after` hook; call at the top level of a test file. */
export function useCloudForMachines(): CloudForMachines {
  let started: Promise<TestCloud> | undefined;
  const machines: MachineProcess[] = [];
  after(async () => {
    for (const machine of machines) await machine.stop();
    for (const machine of machines) await machine.cleanup();
    await (await started?.catch(() => undefined))?.stop();
  });
  const cloud = () => {
    started ??= startTestCloud();
    return started;
  };
  const startMachine = async (options: StartMachineOptions) => {
    const machine = await startMachineProcess(options);
    machines.push(machine);
    return machine;
  };
  return {
    cloud,
    startMachine,
    async createPart(name, config) {
      const part = await createCloudPart(await cloud(), name);
      await setPartConfig(part, config);
      return part;
    },
    async startPartMachine(part, { refreshInterval = '15s', bindAddress, ...options } = {}) {
      const file = credentialsFile((await cloud()).url, part, refreshInterval ?? undefined) as {
        cloud: Record<string, unknown>;
      };
      if (refreshInterval === null) delete file.cloud.refresh_interval;
      const network = bindAddress === undefined ? {} : { network: { bind_address: bindAddress } };
      return startMachine({ ...options, config: { ...file, ...network } });
    },
  };
}

/** The machine API URL from the machine's `serving` log line (waits for it). */
export async function servingUrl(machine: MachineProcess): Promise<string> {
  const serving = await machine.waitForLine(/\tserving\t/);
  return (JSON.parse(serving.split('\t').at(-1) as string) as { url: string }).url;
}

/** The real SDK's robot client dialled directly at `url` (a `localhost` host), without sessions. */
export function dialMachine(
  url: string,
  credentials: Credential,
  transport: SdkTransportKind = 'grpc',
): Promise<RobotClient> {
  return createSdkRobotClient({ host: url, transport, credentials, disableSessions: true });
}

/** `dialMachine`, one call, disconnect. */
export async function withMachineClient<T>(
  url: string,
  credentials: Credential,
  use: (client: RobotClient) => Promise<T>,
  transport: SdkTransportKind = 'grpc',
): Promise<T> {
  const client = await dialMachine(url, credentials, transport);
  try {
    return await use(client);
  } finally {
    await client.disconnect();
  }
}

/** The test organization's owner API key as SDK credentials (authorized for every machine). */
export function ownerKeyCredential(t: TestCloud): Credential {
  return { type: 'api-key', authEntity: t.bootstrap.api_key_id, payload: t.bootstrap.api_key };
}
