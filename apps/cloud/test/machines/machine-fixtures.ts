import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { type Client, createClient } from '@connectrpc/connect';
import { machineConnectionPb } from '@mcloud/protocol';
import { type RunningCloud, startCloud } from '../../src/cloud-app.ts';
import { type CloudConfig, loadCloudConfig } from '../../src/config/cloud-config.ts';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { ownerCredentials } from '../support/fleet-fixtures.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

/** Fast machine-connection timing for tests (background sweeps off: tests run them explicitly). */
export function fastMachineConnection(config: CloudConfig): CloudConfig {
  return {
    ...config,
    machineConnection: {
      heartbeatIntervalMs: 100,
      silenceTimeoutMs: 500,
      credentialRecheckMs: 200,
      lastAccessWriteIntervalMs: 5_000,
      offlineSweepIntervalMs: 3_600_000,
      logRetentionIntervalMs: 3_600_000,
    },
  };
}

export async function startMachineTestCloud(clock?: Clock): Promise<TestCloud> {
  return startTestCloud({ configure: fastMachineConnection, ...(clock && { clock }) });
}

/** Another replica on the same database (its own port and data directory). */
export async function startReplica(
  t: TestCloud,
  clock?: Clock,
): Promise<{ cloud: RunningCloud; stop(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-replica-'));
  const databaseUrl = t.cloud.deps.config.databaseUrl as string;
  const config = fastMachineConnection(
    loadCloudConfig(['--port', '0', '--data-dir', dataDir, '--database-url', databaseUrl], {}),
  );
  const cloud = await startCloud(config, clock ? { clock } : {});
  return {
    cloud,
    async stop() {
      await cloud.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TestMachine {
  robotId: string;
  partId: string;
  secret: string;
}

/** A machine with its main part, made through AppService with the owner key. */
export async function newMachine(
  owner: AuthedClients,
  locationId: string,
  name: string,
): Promise<TestMachine> {
  const { id: robotId } = await owner.app.newRobot({ name, location: locationId });
  const { parts } = await owner.app.getRobotParts({ robotId });
  const main = parts.find((p) => p.mainPart);
  if (!main) throw new Error('no main part');
  return { robotId, partId: main.id, secret: main.secret };
}

export async function ownerOf(t: TestCloud): Promise<AuthedClients> {
  return createAuthedClients(t.url, ownerCredentials(t));
}

export async function machineClients(url: string, machine: TestMachine): Promise<AuthedClients> {
  return createAuthedClients(url, { partId: machine.partId, secret: machine.secret });
}

type ConnectRequest = machineConnectionPb.ConnectRequest;
type ConnectResponse = machineConnectionPb.ConnectResponse;

/** A machine-side live stream: send requests, read responses one by one. */
export interface LiveStreamClient {
  send(message: MessageInitShape<typeof machineConnectionPb.ConnectRequestSchema>['message']): void;
  next(timeoutMs?: number): Promise<ConnectResponse>;
  /** Half-closes the machine side (a clean goodbye). */
  end(): void;
  /** Resolves with the error that ended the stream, or undefined for a clean end. */
  ended: Promise<unknown>;
  abort(): void;
}

export function openLiveStream(
  clients: AuthedClients,
  partId: string,
  configRevision = '',
): LiveStreamClient {
  const client: Client<typeof machineConnectionPb.MachineConnectionService> = createClient(
    machineConnectionPb.MachineConnectionService,
    clients.transport,
  );
  const outgoing: ConnectRequest[] = [
    create(machineConnectionPb.ConnectRequestSchema, {
      message: { case: 'hello', value: { partId, configRevision, version: 'test' } },
    }),
  ];
  let wakeSender: (() => void) | undefined;
  let closed = false;
  const controller = new AbortController();
  async function* requests() {
    for (;;) {
      const next = outgoing.shift();
      if (next) {
        yield next;
        continue;
      }
      if (closed) return;
      await new Promise<void>((resolve) => {
        wakeSender = resolve;
      });
    }
  }
  const responses = client.connect(requests(), { signal: controller.signal })[Symbol.asyncIterator]();
  const received: ConnectResponse[] = [];
  const waiters: ((r: ConnectResponse | undefined) => void)[] = [];
  let endResolve: (error: unknown) => void = () => {};
  const ended = new Promise<unknown>((resolve) => {
    endResolve = resolve;
  });
  let done = false;
  (async () => {
    try {
      for (;;) {
        const result = await responses.next();
        if (result.done) break;
        const waiter = waiters.shift();
        if (waiter) waiter(result.value);
        else received.push(result.value);
      }
      endResolve(undefined);
    } catch (error) {
      endResolve(error);
    } finally {
      done = true;
      for (const waiter of waiters.splice(0)) waiter(undefined);
    }
  })();
  return {
    send(message) {
      outgoing.push(create(machineConnectionPb.ConnectRequestSchema, { message }));
      wakeSender?.();
    },
    async next(timeoutMs = 5_000) {
      const queued = received.shift();
      if (queued) return queued;
      if (done) throw new Error('the live stream ended');
      const response = await new Promise<ConnectResponse | undefined>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs} ms`)), timeoutMs);
        waiters.push((r) => {
          clearTimeout(timer);
          resolve(r);
        });
      });
      if (!response) throw new Error('the live stream ended');
      return response;
    },
    end() {
      closed = true;
      wakeSender?.();
    },
    ended,
    abort: () => controller.abort(),
  };
}

/** Reads until a message of the given kind arrives (skipping heartbeats). */
type ResponseValue<K> =
  Extract<ConnectResponse['message'], { case: K }> extends { value: infer V } ? V : never;

export async function nextOfKind<K extends NonNullable<ConnectResponse['message']['case']>>(
  stream: LiveStreamClient,
  kind: K,
  timeoutMs = 5_000,
): Promise<ResponseValue<K>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await stream.next(Math.max(1, deadline - Date.now()));
    if (response.message.case === kind) {
      return response.message.value as unknown as ResponseValue<K>;
    }
  }
}

/** Keeps the machine side alive: a heartbeat every `intervalMs` until stopped. */
export function heartbeats(stream: LiveStreamClient, intervalMs = 100): () => void {
  const timer = setInterval(() => stream.send({ case: 'heartbeat', value: {} }), intervalMs);
  return () => clearInterval(timer);
}
