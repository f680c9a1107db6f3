import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code as ConnectCode } from '@connectrpc/connect';
import { appPb } from '@mcloud/protocol';
import { Code, createSdkClient, expectRpcError } from '@mcloud/sdk-testkit';
import type { ViamClient } from '@viamrobotics/sdk';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { notificationListenerName } from '../../src/infra/postgres/notification-listener.ts';
import type { AuthedClients } from '../support/connect-clients.ts';
import { createForeignOrganization, expectCode } from '../support/fleet-fixtures.ts';
import type { TestCloud } from '../support/test-cloud.ts';
import {
  machineClients,
  newMachine,
  ownerOf,
  startMachineTestCloud,
  startReplica,
  type TestMachine,
} from './machine-fixtures.ts';

const dayMs = 86_400_000;
let nowMs = Date.parse('2026-06-10T08:00:00Z');
const clock: Clock = { nowMs: () => nowMs };
let t: TestCloud;
let replica: Awaited<ReturnType<typeof startReplica>>;
let owner: AuthedClients;
let sdk: ViamClient;
let machine: TestMachine;
let robot: AuthedClients;
const levels = ['info', 'warn', 'error', 'debug'];

interface SdkLogEntry {
  level: string;
  message: string;
  loggerName: string;
  time?: { toDate(): Date };
}

before(async () => {
  t = await startMachineTestCloud(clock);
  replica = await startReplica(t, clock);
  owner = await ownerOf(t);
  sdk = await createSdkClient({
    url: t.url,
    apiKeyId: t.bootstrap.api_key_id,
    apiKey: t.bootstrap.api_key,
    transport: 'grpc-web',
  });
  machine = await newMachine(owner, t.bootstrap.location_id, 'log-bot');
  robot = await machineClients(t.url, machine);
});
after(async () => {
  await replica?.stop();
  await t?.stop();
});

function entry(i: number, baseMs: number) {
  return {
    level: levels[i % 4] as string,
    message: i % 10 === 0 ? `Motor stalled #${i}` : `entry ${i}`,
    loggerName: 'rdk.resource',
    host: 'pi',
    time: timestampFromMs(baseMs + i * 1000),
    caller: { Defined: true, File: 'x.go', Line: i, Function: 'f' },
    fields: [{ Key: 'n', Type: 11, Integer: i }],
  };
}

test('GetRobotPartLogs through the SDK: newest first, pages backwards in time, filter and levels', async () => {
  const base = nowMs - 3_600_000;
  await robot.robot.log({ id: machine.partId, logs: Array.from({ length: 150 }, (_, i) => entry(i, base)) });
  await robot.robot.log({
    id: machine.partId,
    logs: Array.from({ length: 100 }, (_, i) => entry(150 + i, base)),
  });

  const seen: string[] = [];
  let token = '';
  const pageSizes: number[] = [];
  do {
    const page = await sdk.appClient.getRobotPartLogs(machine.partId, undefined, undefined, token);
    pageSizes.push(page.logs.length);
    for (const log of page.logs as SdkLogEntry[]) seen.push(log.message);
    token = page.nextPageToken;
  } while (token !== '');
  assert.deepEqual(pageSizes, [100, 100, 50]);
  const expected = Array.from({ length: 250 }, (_, i) =>
    i % 10 === 0 ? `Motor stalled #${i}` : `entry ${i}`,
  ).reverse();
  assert.deepEqual(seen, expected);

  const first = (await sdk.appClient.getRobotPartLogs(machine.partId)).logs[0] as SdkLogEntry;
  assert.equal(first.loggerName, 'rdk.resource');
  assert.equal(first.time?.toDate().getTime(), base + 249_000);

  const motor = await sdk.appClient.getRobotPartLogs(machine.partId, 'motor STALLED');
  assert.equal(motor.logs.length, 25);
  assert.equal(motor.nextPageToken, '');
  const errors = await sdk.appClient.getRobotPartLogs(machine.partId, undefined, ['error']);
  assert.ok(errors.logs.length === 62 || errors.logs.length === 63);
  assert.ok((errors.logs as SdkLogEntry[]).every((l) => l.level === 'error'));

  // Raw: time range, limit, errors_only, bad input.
  const ranged = await owner.app.getRobotPartLogs({
    id: machine.partId,
    start: timestampFromMs(base + 10_000),
    end: timestampFromMs(base + 19_000),
    limit: 4n,
  });
  assert.deepEqual(
    ranged.logs.map((l) => l.message),
    ['entry 19', 'entry 18', 'entry 17', 'entry 16'],
  );
  const rest = await owner.app.getRobotPartLogs({
    id: machine.partId,
    start: timestampFromMs(base + 10_000),
    end: timestampFromMs(base + 19_000),
    limit: 4n,
    pageToken: ranged.nextPageToken,
  });
  assert.deepEqual(
    rest.logs.map((l) => l.message),
    ['entry 15', 'entry 14', 'entry 13', 'entry 12'],
  );
  assert.deepEqual(rest.logs[0]?.caller, { Defined: true, File: 'x.go', Line: 15, Function: 'f' });
  assert.deepEqual(rest.logs[0]?.fields, [{ Key: 'n', Type: 11, Integer: 15 }]);
  const errorsOnly = await owner.app.getRobotPartLogs({ id: machine.partId, errorsOnly: true, limit: 1000n });
  assert.equal(errorsOnly.logs.length, errors.logs.length);
  await expectCode(
    owner.app.getRobotPartLogs({ id: machine.partId, pageToken: 'garbage' }),
    ConnectCode.InvalidArgument,
    /page_token/,
  );
  await expectCode(
    owner.app.getRobotPartLogs({ id: machine.partId, limit: 5000n }),
    ConnectCode.InvalidArgument,
    /limit: must be from 1 to 1000/,
  );
  await expectCode(
    owner.app.getRobotPartLogs({ id: machine.partId, levels: ['loud'] }),
    ConnectCode.InvalidArgument,
    /levels\[0\]/,
  );
  await expectRpcError(sdk.appClient.getRobotPartLogs('00000000-0000-4000-8000-000000000000'), Code.NotFound);

  // Another organization sees nothing; the part itself may read its own logs.
  const foreign = await createForeignOrganization(t, 'log-foreign');
  const foreignSdk = await createSdkClient({
    url: t.url,
    apiKeyId: foreign.apiKeyId,
    apiKey: foreign.apiKey,
    transport: 'grpc',
  });
  await expectRpcError(foreignSdk.appClient.getRobotPartLogs(machine.partId), Code.NotFound);
  assert.equal((await robot.app.getRobotPartLogs({ id: machine.partId, limit: 1n })).logs.length, 1);
});

test('TailRobotPartLogs through the SDK sees entries stored by another replica, as they arrive', async () => {
  const all: SdkLogEntry[] = [];
  const errorsOnly: SdkLogEntry[] = [];
  const tails = [
    sdk.appClient.tailRobotPartLogs(machine.partId, all, undefined, false),
    sdk.appClient.tailRobotPartLogs(machine.partId, errorsOnly),
  ].map((p: Promise<void>) => p.catch(() => {}));
  await waitFor(async () => t.cloud.deps.machines.logTail.followers(machine.partId) === 2);

  const onReplica = await machineClients(replica.cloud.url, machine);
  const started = performance.now();
  await onReplica.robot.log({ id: machine.partId, logs: [entry(1000, nowMs), entry(1002, nowMs)] });
  await waitFor(async () => all.length === 2);
  console.log(
    `tail: Log on replica B → entries on the SDK tail at A in ${(performance.now() - started).toFixed(1)} ms`,
  );
  assert.deepEqual(
    all.map((l) => [l.level, l.message]),
    [
      ['info', 'Motor stalled #1000'],
      ['error', 'entry 1002'],
    ],
  );
  await waitFor(async () => errorsOnly.length === 1);
  assert.equal(errorsOnly[0]?.message, 'entry 1002');

  await onReplica.robot.log({
    id: machine.partId,
    logs: Array.from({ length: 300 }, (_, i) => entry(2000 + i, nowMs)),
  });
  await waitFor(async () => all.length === 302);
  assert.equal(all.at(-1)?.message, 'entry 2299');
  // Other parts' logs never show up.
  const other = await newMachine(owner, t.bootstrap.location_id, 'log-bot-2');
  await (await machineClients(t.url, other)).robot.log({ id: other.partId, logs: [entry(7, nowMs)] });
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(all.length, 302);
  await expectRpcError(
    sdk.appClient.tailRobotPartLogs('00000000-0000-4000-8000-000000000000', []),
    Code.NotFound,
  );
  void tails;
});

test('a tail survives the loss of the LISTEN connection: entries stored meanwhile arrive after the reconnect', async () => {
  const received: SdkLogEntry[] = [];
  const tail = sdk.appClient.tailRobotPartLogs(machine.partId, received, 'outage', false).catch(() => {});
  await waitFor(async () => t.cloud.deps.machines.logTail.followers(machine.partId) >= 3);
  const killed = await t.cloud.deps.db.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE application_name = $1 AND datname = current_database()`,
    [notificationListenerName],
  );
  assert.ok((killed.rowCount ?? 0) >= 1);
  await robot.robot.log({
    id: machine.partId,
    logs: [{ level: 'warn', message: 'during outage', time: timestampFromMs(nowMs) }],
  });
  await waitFor(async () => received.length === 1);
  await robot.robot.log({
    id: machine.partId,
    logs: [{ level: 'warn', message: 'after outage', time: timestampFromMs(nowMs) }],
  });
  await waitFor(async () => received.length === 2);
  assert.deepEqual(
    received.map((l) => l.message),
    ['during outage', 'after outage'],
  );
  void tail;
});

test('retention: daily partitions older than 30 days are dropped whole, newer ones kept (injected clock)', async () => {
  const keeper = await newMachine(owner, t.bootstrap.location_id, 'retention-bot');
  const clients = await machineClients(t.url, keeper);
  const day0 = nowMs;
  await clients.robot.log({
    id: keeper.partId,
    logs: [{ level: 'info', message: 'old', time: timestampFromMs(day0) }],
  });
  nowMs = day0 + 29 * dayMs;
  await clients.robot.log({
    id: keeper.partId,
    logs: [{ level: 'info', message: 'recent', time: timestampFromMs(nowMs) }],
  });
  const partition = (ms: number) =>
    `part_logs_${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')}`;

  assert.deepEqual((await t.cloud.deps.machines.applyLogRetention()).dropped, []);
  nowMs = day0 + 31 * dayMs;
  // Both replicas try at once: one drops, the other finds the lock taken or nothing left.
  const results = await Promise.all([
    t.cloud.deps.machines.applyLogRetention(),
    replica.cloud.deps.machines.applyLogRetention(),
  ]);
  const dropped = results.flatMap((r) => r.dropped);
  assert.ok(dropped.includes(partition(day0)), JSON.stringify(dropped));
  assert.ok(!dropped.includes(partition(day0 + 29 * dayMs)));
  assert.equal(new Set(dropped).size, dropped.length);
  const left = await owner.app.getRobotPartLogs({ id: keeper.partId });
  assert.deepEqual(
    left.logs.map((l) => l.message),
    ['recent'],
  );
  // Partitions exist ahead for today and tomorrow; inserts into a dropped day's range recreate it on demand.
  const tables = await t.cloud.deps.db.query<{ relname: string }>(
    "SELECT relname FROM pg_class WHERE relname LIKE 'part_logs_2%'",
  );
  const names = tables.rows.map((r) => r.relname);
  assert.ok(names.includes(partition(nowMs)) && names.includes(partition(nowMs + dayMs)), names.join());
  assert.ok(!names.includes(partition(day0)));
  await clients.robot.log({
    id: keeper.partId,
    logs: [{ level: 'info', message: 'after', time: timestampFromMs(nowMs) }],
  });
  assert.equal((await owner.app.getRobotPartLogs({ id: keeper.partId })).logs[0]?.message, 'after');
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('logs cannot be deleted by users: no RPC deletes them, and deleting the machine keeps them until retention', async () => {
  const logMethods = appPb.AppService.methods
    .filter((method) => /Logs?$|Logs?[A-Z]/.test(method.name))
    .map((m) => m.name);
  assert.deepEqual(logMethods.sort(), ['GetRobotPartLogs', 'TailRobotPartLogs']);
  const doomed = await newMachine(owner, t.bootstrap.location_id, 'doomed-bot');
  const clients = await machineClients(t.url, doomed);
  await clients.robot.log({
    id: doomed.partId,
    logs: [{ level: 'error', message: 'last words', time: timestampFromMs(nowMs) }],
  });
  await owner.app.deleteRobot({ id: doomed.robotId });
  const kept = await t.cloud.deps.db.query<{ message: string }>(
    'SELECT message FROM part_logs WHERE part_id = $1',
    [doomed.partId],
  );
  assert.deepEqual(kept.rows, [{ message: 'last words' }]);
  // The deleted machine's logs are no longer readable through the API.
  await expectCode(owner.app.getRobotPartLogs({ id: doomed.partId }), ConnectCode.NotFound);
});
