import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { appPb } from '@mcloud/protocol';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { createForeignOrganization, expectCode, ownerCredentials } from '../support/fleet-fixtures.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let t: TestCloud;
let owner: AuthedClients;
let nowMs = Date.parse('2026-03-01T12:00:00Z');
const clock: Clock = { nowMs: () => nowMs };
before(async () => {
  t = await startTestCloud({ clock });
  owner = await createAuthedClients(t.url, ownerCredentials(t));
});
after(async () => {
  await t?.stop();
});

async function mainPartOf(robotId: string) {
  const { parts } = await owner.app.getRobotParts({ robotId });
  const main = parts.find((p) => p.mainPart);
  assert.ok(main);
  return main;
}

test('NewRobot creates the machine and its main part with secret, dns name and addresses', async () => {
  const locationId = t.bootstrap.location_id;
  const { id } = await owner.app.newRobot({ name: 'Rover One', location: locationId });
  const { robot } = await owner.app.getRobot({ id });
  assert.equal(robot?.name, 'Rover One');
  assert.equal(robot?.location, locationId);
  assert.equal(robot?.onlineState, appPb.OnlineState.AWAITING_SETUP);
  const main = await mainPartOf(id);
  assert.equal(main.name, 'Rover One-main');
  assert.equal(main.dnsName, 'rover-one-main');
  assert.equal(main.fqdn, `rover-one-main.${locationId}.viam.cloud`);
  assert.equal(main.localFqdn, `rover-one-main.${locationId}.local.viam.cloud`);
  assert.equal(main.secrets.length, 1);
  assert.equal(main.secret, main.secrets[0]?.secret);
  assert.equal(main.onlineState, appPb.OnlineState.AWAITING_SETUP);

  // Same name in another location: the dns name stays unique.
  const { location: other } = await owner.app.createLocation({
    organizationId: t.bootstrap.organization_id,
    name: 'other',
  });
  const { id: twin } = await owner.app.newRobot({ name: 'Rover One', location: other?.id as string });
  const twinMain = await mainPartOf(twin);
  assert.notEqual(twinMain.dnsName, main.dnsName);
  assert.match(twinMain.dnsName, /^rover-one-main-[0-9a-f]{6}$/);
  await expectCode(owner.app.newRobot({ name: 'Rover One', location: locationId }), Code.AlreadyExists);
  await expectCode(owner.app.newRobot({ name: '', location: locationId }), Code.InvalidArgument, /name/);

  // Listing.
  assert.ok((await owner.app.listRobots({ locationId })).robots.some((r) => r.id === id));
  const both = await owner.app.listRobotsForLocations({ locationIds: [locationId, other?.id as string] });
  assert.deepEqual(new Set(both.robots.map((r) => r.id)), new Set([id, twin]));
  assert.equal((await owner.app.listRobotsForOrg({ orgId: t.bootstrap.organization_id })).robots.length, 2);

  // Moving the robot moves its parts.
  const moved = await owner.app.updateRobot({ id: twin, name: 'Rover Two', location: locationId });
  assert.equal(moved.robot?.location, locationId);
  const movedMain = await mainPartOf(twin);
  assert.equal(movedMain.locationId, locationId);
  assert.equal(movedMain.fqdn, `${movedMain.dnsName}.${locationId}.viam.cloud`);

  await owner.app.updateRobotMetadata({ id, data: { color: 'red' } });
  assert.deepEqual((await owner.app.getRobotMetadata({ id })).data, { color: 'red' });

  await owner.app.deleteRobot({ id: twin });
  await expectCode(owner.app.getRobot({ id: twin }), Code.NotFound);
});

test('parts: add, get by name, config_json, main part, restart flag, metadata, delete', async () => {
  const { id: robotId } = await owner.app.newRobot({ name: 'arm', location: t.bootstrap.location_id });
  const { partId } = await owner.app.newRobotPart({ robotId, partName: 'camera' });
  await expectCode(owner.app.newRobotPart({ robotId, partName: 'camera' }), Code.AlreadyExists);
  const { part, configJson } = await owner.app.getRobotPart({ id: partId });
  assert.equal(part?.mainPart, false);
  assert.equal(configJson, '{}');
  const byName = await owner.app.getRobotPartByNameAndLocation({
    name: 'camera',
    locationId: t.bootstrap.location_id,
  });
  assert.equal(byName.part?.id, partId);

  const main = await mainPartOf(robotId);
  await expectCode(owner.app.deleteRobotPart({ partId: main.id }), Code.FailedPrecondition, /main part/);
  await owner.app.markPartAsMain({ partId });
  const parts = (await owner.app.getRobotParts({ robotId })).parts;
  assert.deepEqual(
    parts.filter((p) => p.mainPart).map((p) => p.id),
    [partId],
  );
  await owner.app.markPartForRestart({ partId });
  const restart = await t.cloud.deps.db.query('SELECT needs_restart FROM robot_parts WHERE id = $1', [
    partId,
  ]);
  assert.equal(restart.rows[0]?.needs_restart, true);

  await owner.app.updateRobotPartMetadata({ id: partId, data: { slot: 1 } });
  assert.deepEqual((await owner.app.getRobotPartMetadata({ id: partId })).data, { slot: 1 });

  await owner.app.deleteRobotPart({ partId: main.id });
  assert.equal((await owner.app.getRobotParts({ robotId })).parts.length, 1);
});

test('UpdateRobotPart: validation, optimistic concurrency, history newest first, restore', async () => {
  const { id: robotId } = await owner.app.newRobot({
    name: 'history-bot',
    location: t.bootstrap.location_id,
  });
  const main = await mainPartOf(robotId);
  const v1 = { components: [{ name: 'motor', api: 'rdk:component:motor', model: 'fake' }] };
  const v2 = {
    components: [{ name: 'motor', api: 'rdk:component:motor', model: 'fake', attributes: { max_rpm: 100 } }],
  };

  nowMs += 1000;
  const first = await owner.app.updateRobotPart({
    id: main.id,
    name: main.name,
    robotConfig: v1,
    lastKnownUpdate: main.lastUpdated,
  });
  assert.deepEqual(first.part?.robotConfig, v1);
  const firstUpdated = first.part?.lastUpdated;
  assert.ok(firstUpdated);

  nowMs += 1000;
  const second = await owner.app.updateRobotPart({
    id: main.id,
    name: main.name,
    robotConfig: v2,
    lastKnownUpdate: firstUpdated,
  });
  assert.deepEqual(second.part?.robotConfig, v2);

  // A stale editor (based on the first version) is refused, naming both times.
  const stale = await expectCode(
    owner.app.updateRobotPart({
      id: main.id,
      name: main.name,
      robotConfig: { components: [] },
      lastKnownUpdate: firstUpdated,
    }),
    Code.FailedPrecondition,
    /last_known_update/,
  );
  assert.match(stale.message, /2026-03-01T12:00:02\.000Z/);
  assert.match(stale.message, /2026-03-01T12:00:01\.000Z/);

  await expectCode(
    owner.app.updateRobotPart({ id: main.id, name: main.name, robotConfig: { components: 'motor' } }),
    Code.InvalidArgument,
    /robot_config\.components/,
  );
  await expectCode(
    owner.app.updateRobotPart({
      id: main.id,
      name: main.name,
      robotConfig: { components: [{ model: 'x' }] },
    }),
    Code.InvalidArgument,
    /robot_config\.components\[0\]\.name/,
  );
  const huge = { blob: 'x'.repeat(4 * 1024 * 1024 + 10) };
  await expectCode(
    owner.app.updateRobotPart({ id: main.id, name: main.name, robotConfig: huge }),
    Code.InvalidArgument,
    /4194304 bytes/,
  );

  const { history } = await owner.app.getRobotPartHistory({ id: main.id });
  assert.equal(history.length, 2);
  assert.deepEqual(history[0]?.old?.robotConfig, v1);
  assert.deepEqual(history[1]?.old?.robotConfig, {});
  assert.equal(history[0]?.editedBy?.type, appPb.AuthenticationType.API_KEY);
  assert.equal(history[0]?.editedBy?.value, t.bootstrap.api_key_id);
  assert.equal(history[0]?.part, main.id);
  assert.equal(history[0]?.robot, robotId);
  assert.ok((history[0]?.when?.seconds ?? 0n) > (history[1]?.when?.seconds ?? 0n));

  // Restore the first configuration from history.
  nowMs += 1000;
  const restored = await owner.app.updateRobotPart({
    id: main.id,
    name: main.name,
    robotConfig: history[0]?.old?.robotConfig,
    lastKnownUpdate: second.part?.lastUpdated,
  });
  assert.deepEqual(restored.part?.robotConfig, v1);
  const { configJson } = await owner.app.getRobotPart({ id: main.id });
  // Pretty JSON, keys in the order the user wrote them.
  assert.equal(configJson, JSON.stringify(v1, null, 2));
  assert.equal((await owner.app.getRobotPartHistory({ id: main.id })).history.length, 3);
  const revision = await t.cloud.deps.db.query('SELECT revision FROM robot_parts WHERE id = $1', [main.id]);
  assert.equal(Number(revision.rows[0]?.revision), 4);
});

test('online state follows last access and the injected clock', async () => {
  const { id: robotId } = await owner.app.newRobot({ name: 'pinger', location: t.bootstrap.location_id });
  const main = await mainPartOf(robotId);
  await t.cloud.deps.db.query('UPDATE robot_parts SET last_access = $2 WHERE id = $1', [
    main.id,
    new Date(nowMs - 5_000),
  ]);
  const online = (await owner.app.getRobotPart({ id: main.id })).part;
  assert.equal(online?.onlineState, appPb.OnlineState.ONLINE);
  assert.equal(online?.secondsSinceOnline, 0n);
  assert.equal((await owner.app.getRobot({ id: robotId })).robot?.onlineState, appPb.OnlineState.ONLINE);
  nowMs += 120_000;
  const offline = (await owner.app.getRobotPart({ id: main.id })).part;
  assert.equal(offline?.onlineState, appPb.OnlineState.OFFLINE);
  assert.equal(offline?.secondsSinceOnline, 125n);
});

test('part secrets: at most two, deletion revokes machine tokens, machine credentials reach only their part', async () => {
  const { id: robotId } = await owner.app.newRobot({ name: 'secretive', location: t.bootstrap.location_id });
  const main = await mainPartOf(robotId);
  const { partId: otherPartId } = await owner.app.newRobotPart({ robotId, partName: 'second' });
  const machine = await createAuthedClients(t.url, { partId: main.id, secret: main.secret }, 'grpc-web');
  assert.equal((await machine.app.getRobotPart({ id: main.id })).part?.id, main.id);
  // Other parts, even of the same machine, are invisible to machine credentials.
  await expectCode(machine.app.getRobotPart({ id: otherPartId }), Code.NotFound);
  await expectCode(machine.app.getRobot({ id: robotId }), Code.NotFound);
  assert.deepEqual(
    (await machine.app.getRobotParts({ robotId })).parts.map((p) => p.id),
    [main.id],
  );
  await expectCode(
    machine.app.updateRobotPart({ id: main.id, name: main.name, robotConfig: {} }),
    Code.PermissionDenied,
  );

  nowMs += 1000;
  const withTwo = await owner.app.createRobotPartSecret({ partId: main.id });
  assert.equal(withTwo.part?.secrets.length, 2);
  await expectCode(
    owner.app.createRobotPartSecret({ partId: main.id }),
    Code.FailedPrecondition,
    /2 enabled secrets/,
  );
  const [oldSecret, newSecret] = withTwo.part?.secrets ?? [];
  assert.equal(oldSecret?.secret, main.secret);
  await owner.app.deleteRobotPartSecret({ partId: main.id, secretId: oldSecret?.id as string });
  const afterDelete = (await owner.app.getRobotPart({ id: main.id })).part;
  assert.equal(afterDelete?.secret, newSecret?.secret);
  await expectCode(machine.app.getRobotPart({ id: main.id }), Code.Unauthenticated);
  const renewed = await createAuthedClients(t.url, { partId: main.id, secret: newSecret?.secret as string });
  assert.equal((await renewed.app.getRobotPart({ id: main.id })).part?.id, main.id);
});

test('foreign machines and parts answer NotFound; malformed IDs InvalidArgument', async () => {
  const foreign = await createForeignOrganization(t, 'elsewhere');
  const foreignClient = await createAuthedClients(t.url, { keyId: foreign.apiKeyId, key: foreign.apiKey });
  const { id: foreignRobot } = await foreignClient.app.newRobot({
    name: 'theirs',
    location: foreign.locationId,
  });
  const foreignPart = (await foreignClient.app.getRobotParts({ robotId: foreignRobot })).parts[0];
  await expectCode(owner.app.getRobot({ id: foreignRobot }), Code.NotFound);
  await expectCode(owner.app.getRobotParts({ robotId: foreignRobot }), Code.NotFound);
  await expectCode(owner.app.getRobotPart({ id: foreignPart?.id as string }), Code.NotFound);
  await expectCode(owner.app.deleteRobot({ id: foreignRobot }), Code.NotFound);
  await expectCode(owner.app.getRobotPartHistory({ id: foreignPart?.id as string }), Code.NotFound);
  await expectCode(owner.app.getRobot({ id: '00000000-0000-4000-8000-000000000000' }), Code.NotFound);
  await expectCode(
    owner.app.getRobot({ id: 'robot-1' }),
    Code.InvalidArgument,
    /^\[invalid_argument\] id: must be a UUID/,
  );
  await expectCode(
    owner.app.updateRobotPart({
      id: foreignPart?.id as string,
      name: 'x',
      robotConfig: {},
      lastKnownUpdate: timestampFromDate(new Date()),
    }),
    Code.NotFound,
  );
});
