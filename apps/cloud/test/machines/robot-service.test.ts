import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { appPb, robotPb } from '@mcloud/protocol';
import type { Clock } from '../../src/domain/shared/clock.ts';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { apiKeyRole, createForeignOrganization, expectCode } from '../support/fleet-fixtures.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';
import {
  fastMachineConnection,
  machineClients,
  newMachine,
  ownerOf,
  startMachineTestCloud,
  type TestMachine,
} from './machine-fixtures.ts';

let t: TestCloud;
let owner: AuthedClients;
let machine: TestMachine;
let robot: AuthedClients;
const nowMs = Date.parse('2026-05-01T10:00:00Z');
const clock: Clock = { nowMs: () => nowMs };

before(async () => {
  t = await startMachineTestCloud(clock);
  owner = await ownerOf(t);
  machine = await newMachine(owner, t.bootstrap.location_id, 'config-bot');
  robot = await machineClients(t.url, machine);
});
after(async () => {
  await t?.stop();
});

test('Config converts the stored JSON into RobotConfig with cloud section, secrets and API keys', async () => {
  const orgId = t.bootstrap.organization_id;
  const locationId = t.bootstrap.location_id;
  const robotKey = await owner.app.createKey({
    name: 'machine-key',
    authorizations: [apiKeyRole('robot', 'owner', machine.robotId, orgId)],
  });
  const { location: elsewhere } = await owner.app.createLocation({
    organizationId: orgId,
    name: 'elsewhere',
  });
  const locationKey = await owner.app.createKey({
    name: 'this-location',
    authorizations: [apiKeyRole('location', 'operator', locationId, orgId)],
  });
  const otherKey = await owner.app.createKey({
    name: 'other-location',
    authorizations: [apiKeyRole('location', 'owner', elsewhere?.id as string, orgId)],
  });
  await owner.app.updateRobotPart({
    id: machine.partId,
    name: '',
    robotConfig: {
      components: [
        {
          name: 'temp',
          type: 'sensor',
          model: 'fake',
          attributes: { rate: 5 },
          depends_on: ['board'],
          frame: {
            parent: 'world',
            translation: { x: 1, y: 2, z: 3 },
            orientation: { type: 'ov_degrees', value: { th: 90, x: 0, y: 0, z: 1 } },
          },
          service_configs: [
            {
              type: 'data_manager',
              attributes: { capture_methods: [{ method: 'Readings', capture_frequency_hz: 1 }] },
            },
          ],
          log_configuration: { level: 'debug' },
        },
        { name: 'board', api: 'rdk:component:board', model: 'acme:boards:fast' },
      ],
      services: [{ name: 'dm', type: 'data_manager', attributes: { sync_interval_mins: 1 } }],
      modules: [
        {
          name: 'mymod',
          type: 'local',
          executable_path: '/opt/mod/run.sh',
          log_level: 'debug',
          env: { A: '1' },
        },
      ],
      processes: [{ id: 'p1', name: 'echo', args: ['hi'], stop_timeout: '2s' }],
      network: { bind_address: ':9090', no_tls: true },
      log: [{ pattern: 'rdk.*', level: 'warn' }],
      debug: true,
      disable_log_deduplication: true,
      agent: { version_control: { agent: 'stable' } },
      fragments: [],
    },
  });

  const { config } = await robot.robot.config({ id: machine.partId });
  assert.ok(config?.cloud);
  const cloud = config.cloud;
  assert.equal(cloud.id, machine.partId);
  assert.match(cloud.fqdn, new RegExp(`^config-bot-main\\.${locationId}\\.viam\\.cloud$`));
  assert.match(cloud.localFqdn, /\.local\.viam\.cloud$/);
  assert.ok(cloud.locationSecrets.length >= 1 && cloud.locationSecrets[0]?.secret);
  assert.equal(cloud.locationSecret, cloud.locationSecrets[0]?.secret);
  assert.equal(cloud.primaryOrgId, orgId);
  assert.equal(cloud.locationId, locationId);
  assert.equal(cloud.machineId, machine.robotId);
  assert.equal(cloud.signalingInsecure, true, 'no machine TLS configured');

  const [temp, board] = config.components;
  assert.equal(temp?.api, 'rdk:component:sensor');
  assert.equal(temp?.model, 'rdk:builtin:fake');
  assert.deepEqual(temp?.attributes, { rate: 5 });
  assert.deepEqual(temp?.dependsOn, ['board']);
  assert.equal(temp?.frame?.parent, 'world');
  assert.equal(temp?.frame?.translation?.z, 3);
  assert.equal(temp?.frame?.orientation?.type.case, 'vectorDegrees');
  assert.equal(temp?.serviceConfigs[0]?.type, 'data_manager');
  assert.equal(temp?.logConfiguration?.level, 'debug');
  assert.equal(board?.api, 'rdk:component:board');
  assert.equal(board?.model, 'acme:boards:fast');
  assert.equal(config.services[0]?.api, 'rdk:service:data_manager');
  assert.equal(config.modules[0]?.path, '/opt/mod/run.sh');
  assert.deepEqual(config.modules[0]?.env, { A: '1' });
  assert.equal(config.processes[0]?.stopTimeout?.seconds, 2n);
  assert.equal(config.network?.bindAddress, ':9090');
  assert.equal(config.network?.noTls, true);
  assert.deepEqual(
    config.log.map((l) => [l.pattern, l.level]),
    [['rdk.*', 'warn']],
  );
  assert.equal(config.debug, true);
  assert.equal(config.disableLogDeduplication, true);
  const { part } = await owner.app.getRobotPart({ id: machine.partId });
  assert.ok(part);
  assert.equal(
    config.revision,
    (
      await t.cloud.deps.db.query('SELECT revision::text AS r FROM robot_parts WHERE id = $1', [
        machine.partId,
      ])
    ).rows[0]?.r,
  );

  // API keys authorized for the machine at organization (owner from bootstrap), location and machine
  // level, not a key of another location.
  const handler = config.auth?.handlers.find((h) => h.type === robotPb.CredentialsType.API_KEY);
  assert.ok(handler?.config);
  const keys = handler.config.keys as string[];
  assert.ok(keys.includes(t.bootstrap.api_key_id));
  assert.ok(keys.includes(robotKey.id));
  assert.ok(keys.includes(locationKey.id));
  assert.ok(!keys.includes(otherKey.id));
  assert.equal(handler.config[locationKey.id], locationKey.key);
  assert.equal(handler.config[robotKey.id], robotKey.key);
  assert.equal(handler.config[t.bootstrap.api_key_id], t.bootstrap.api_key);
  // Rotation reaches the machine with the next Config.
  const rotated = await owner.app.rotateKey({ id: robotKey.id });
  const again = await robot.robot.config({ id: machine.partId });
  const handlerAgain = again.config?.auth?.handlers.find((h) => h.type === robotPb.CredentialsType.API_KEY);
  assert.equal(handlerAgain?.config?.[robotKey.id], rotated.key);

  // The robot-owner key works as machine credentials too.
  const keyClients = await createAuthedClients(t.url, { keyId: robotKey.id, key: rotated.key });
  assert.equal((await keyClients.robot.config({ id: machine.partId })).config?.cloud?.id, machine.partId);
});

test('Config records agent info and the contact makes the part online', async () => {
  const fresh = await newMachine(owner, t.bootstrap.location_id, 'agent-bot');
  assert.equal(
    (await owner.app.getRobotPart({ id: fresh.partId })).part?.onlineState,
    appPb.OnlineState.AWAITING_SETUP,
  );
  const clients = await machineClients(t.url, fresh);
  await clients.robot.config({
    id: fresh.partId,
    agentInfo: {
      host: 'pi',
      os: 'linux',
      ips: ['10.0.0.2'],
      version: '0.1.0',
      gitRevision: 'abc',
      platform: 'linux/arm64',
      platformTags: [],
    },
  });
  const { part } = await owner.app.getRobotPart({ id: fresh.partId });
  assert.equal(part?.onlineState, appPb.OnlineState.ONLINE);
  assert.equal(part?.lastAccess?.seconds, BigInt(Math.floor(nowMs / 1000)));
  assert.deepEqual(part?.userSuppliedInfo, {
    host: 'pi',
    os: 'linux',
    ips: ['10.0.0.2'],
    version: '0.1.0',
    git_revision: 'abc',
    platform: 'linux/arm64',
    platform_tags: [],
  });
  const robotMessage = (await owner.app.getRobot({ id: fresh.robotId })).robot;
  assert.equal(robotMessage?.onlineState, appPb.OnlineState.ONLINE);
  const transitions = await t.cloud.deps.db.query(
    'SELECT online FROM part_status_changes WHERE part_id = $1',
    [fresh.partId],
  );
  assert.deepEqual(transitions.rows, [{ online: true }]);
});

test('Config: machine credentials only, foreign and unknown parts NotFound, bad stored config FailedPrecondition', async () => {
  const orgId = t.bootstrap.organization_id;
  const other = await newMachine(owner, t.bootstrap.location_id, 'other-bot');
  // A part's secret reaches only that part.
  await expectCode(robot.robot.config({ id: other.partId }), Code.NotFound);
  await expectCode(robot.robot.config({ id: '' }), Code.InvalidArgument, /id/);
  await expectCode(robot.robot.config({ id: 'not-a-uuid' }), Code.InvalidArgument, /id/);
  await expectCode(robot.robot.config({ id: '00000000-0000-4000-8000-000000000000' }), Code.NotFound);
  // Operator keys may log but not read the configuration (it carries secrets); owners may.
  const operatorKey = await owner.app.createKey({
    name: 'op',
    authorizations: [apiKeyRole('robot', 'operator', machine.robotId, orgId)],
  });
  const operator = await createAuthedClients(t.url, { keyId: operatorKey.id, key: operatorKey.key });
  await expectCode(operator.robot.config({ id: machine.partId }), Code.PermissionDenied);
  await operator.robot.log({
    id: machine.partId,
    logs: [{ level: 'info', message: 'from operator', time: timestampFromMs(nowMs) }],
  });
  // Another organization's owner key sees nothing.
  const foreign = await createForeignOrganization(t);
  const foreignClients = await createAuthedClients(t.url, { keyId: foreign.apiKeyId, key: foreign.apiKey });
  await expectCode(foreignClients.robot.config({ id: machine.partId }), Code.NotFound);
  await expectCode(foreignClients.robot.log({ id: machine.partId, logs: [] }), Code.NotFound);
  await expectCode(foreignClients.robot.needsRestart({ id: machine.partId }), Code.NotFound);

  // A stored configuration the machine cannot use: FailedPrecondition naming the path.
  await owner.app.updateRobotPart({
    id: other.partId,
    name: '',
    robotConfig: { components: [{ name: 'x', api: 'sensor', model: 'fake' }] },
  });
  const otherClients = await machineClients(t.url, other);
  await expectCode(
    otherClients.robot.config({ id: other.partId }),
    Code.FailedPrecondition,
    /robot_config\.components\[0\]\.api/,
  );
  await owner.app.updateRobotPart({
    id: other.partId,
    name: '',
    robotConfig: { components: [{ name: 'x', type: 'sensor', model: 'fake', attributes: [1, 2] }] },
  });
  await expectCode(
    otherClients.robot.config({ id: other.partId }),
    Code.FailedPrecondition,
    /components\[0\]\.attributes: must be a JSON object/,
  );
});

test('Log: batches up to 1000 entries, validated; NeedsRestart set by MarkPartForRestart and cleared once read', async () => {
  const entry = (i: number) => ({
    level: 'info',
    message: `m${i}`,
    loggerName: 'rdk',
    time: timestampFromMs(nowMs + i),
  });
  const batch = Array.from({ length: 1000 }, (_, i) => entry(i));
  const started = performance.now();
  await robot.robot.log({ id: machine.partId, logs: batch });
  console.log(`Log: one batch of 1000 entries stored in ${(performance.now() - started).toFixed(1)} ms`);
  await expectCode(
    robot.robot.log({ id: machine.partId, logs: Array.from({ length: 1001 }, (_, i) => entry(i)) }),
    Code.InvalidArgument,
    /logs: must contain at most 1000 entries per request \(got 1001\)/,
  );
  await expectCode(
    robot.robot.log({ id: machine.partId, logs: [{ level: 'loud', message: 'x' }] }),
    Code.InvalidArgument,
    /logs\[0\]\.level: must be one of debug, info, warn, error/,
  );
  await expectCode(
    robot.robot.log({ id: machine.partId, logs: [{ level: 'info', message: 'x'.repeat(70_000) }] }),
    Code.InvalidArgument,
    /logs\[0\]\.message: must be at most 65536 bytes/,
  );
  const stored = await t.cloud.deps.db.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM part_logs WHERE part_id = $1',
    [machine.partId],
  );
  assert.equal(stored.rows[0]?.n, '1001'); // 1000 + the operator's entry

  assert.deepEqual(
    { ...(await robot.robot.needsRestart({ id: machine.partId })), $typeName: undefined },
    {
      $typeName: undefined,
      id: machine.partId,
      mustRestart: false,
      restartCheckInterval: { $typeName: 'google.protobuf.Duration', seconds: 5n, nanos: 0 },
    },
  );
  await owner.app.markPartForRestart({ partId: machine.partId });
  assert.equal((await robot.robot.needsRestart({ id: machine.partId })).mustRestart, true);
  assert.equal((await robot.robot.needsRestart({ id: machine.partId })).mustRestart, false);

  await expectCode(
    robot.robot.certificate({ id: machine.partId }),
    Code.FailedPrecondition,
    /no TLS certificate/,
  );
});

test('Certificate serves the configured machine TLS files, and Config then asks for secure signaling', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'mcloud-machine-tls-'));
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  await writeFile(certFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  await writeFile(keyFile, '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n');
  const tls = await startTestCloud({
    configure: (config) => ({ ...fastMachineConnection(config), machineTls: { certFile, keyFile } }),
  });
  try {
    const tlsOwner = await ownerOf(tls);
    const tlsMachine = await newMachine(tlsOwner, tls.bootstrap.location_id, 'tls-bot');
    const clients = await machineClients(tls.url, tlsMachine);
    const certificate = await clients.robot.certificate({ id: tlsMachine.partId });
    assert.equal(certificate.id, tlsMachine.partId);
    assert.match(certificate.tlsCertificate, /BEGIN CERTIFICATE/);
    assert.match(certificate.tlsPrivateKey, /BEGIN PRIVATE KEY/);
    assert.equal(
      (await clients.robot.config({ id: tlsMachine.partId })).config?.cloud?.signalingInsecure,
      false,
    );
  } finally {
    await tls.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
