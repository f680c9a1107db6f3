import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Code, expectRpcError, sdkTransportKinds, structFromJson } from '@mcloud/sdk-testkit';
import { appApi, type ViamClient } from '@viamrobotics/sdk';
import {
  eventually,
  type HistoryEntry,
  type KeyEntry,
  type Named,
  randomId,
  type SdkCloud,
  startSdkCloud,
} from './e2e-support.ts';

/** The fleet half of AppService through the real SDK `AppClient`, once per transport. */
for (const transport of sdkTransportKinds) {
  describe(`AppClient over ${transport}`, { timeout: 120_000 }, () => {
    let cloud: SdkCloud;
    let app: ViamClient['appClient'];
    let locationId: string;
    let robotId: string;
    let partId: string;

    before(async () => {
      cloud = await startSdkCloud(transport);
      app = cloud.client.appClient;
    });
    after(async () => {
      await cloud?.stop();
    });

    test('listOrganizations and getOrganization show the bootstrap organization', async () => {
      const organizations = await app.listOrganizations();
      assert.deepEqual(
        organizations.map((organization: Named) => organization.id),
        [cloud.organizationId],
      );
      const organization = await app.getOrganization(cloud.organizationId);
      assert.equal(organization?.id, cloud.organizationId);
      assert.equal(organization?.name, 'default');
      assert.ok(organization?.createdOn, 'created_on is set');
    });

    test('locations: list, create, get', async () => {
      const before = await app.listLocations(cloud.organizationId);
      assert.ok(before.some((location: Named) => location.id === cloud.locationId));
      const created = await app.createLocation(cloud.organizationId, 'e2e-site');
      assert.ok(created?.id, 'new location has an id');
      assert.equal(created?.name, 'e2e-site');
      locationId = created.id;
      assert.ok(
        created.organizations.some(
          (entry: { organizationId: string }) => entry.organizationId === cloud.organizationId,
        ),
        'the location names its organization',
      );
      const fetched = await app.getLocation(locationId);
      assert.equal(fetched?.name, 'e2e-site');
      const after = await app.listLocations(cloud.organizationId);
      assert.ok(after.some((location: Named) => location.id === locationId));
    });

    test('newRobot creates a machine with a main part carrying secret and fqdn', async () => {
      robotId = await app.newRobot(locationId, 'e2e-rover');
      assert.ok(robotId);
      const robot = await app.getRobot(robotId);
      assert.equal(robot?.name, 'e2e-rover');
      assert.equal(robot?.location, locationId);
      const robots = await app.listRobots(locationId);
      assert.deepEqual(
        robots.map((entry: Named) => entry.id),
        [robotId],
      );

      const parts = await app.getRobotParts(robotId);
      assert.equal(parts.length, 1);
      const [main] = parts;
      assert.ok(main);
      assert.equal(main.mainPart, true);
      assert.equal(main.robot, robotId);
      assert.equal(main.locationId, locationId);
      assert.ok(main.secret, 'legacy part secret is set (connectToMachine reads it)');
      assert.ok(main.fqdn, 'fqdn is set');
      assert.ok(
        main.secrets.some((secret: { secret: string }) => secret.secret === main.secret),
        'part.secret is one of part.secrets',
      );
      partId = main.id;
    });

    test('getRobotPart returns the part and config_json', async () => {
      const response = await app.getRobotPart(partId);
      assert.equal(response.part?.id, partId);
      assert.equal(response.part?.robot, robotId);
      assert.equal(typeof response.configJson, 'string');
      assert.equal(typeof JSON.parse(response.configJson || '{}'), 'object');
    });

    test('updateRobotPart stores the config, records history, and an old config can be restored', async () => {
      const original = await app.getRobotPart(partId);
      const originalConfig = original.part?.robotConfig?.toJson() ?? {};
      const partName = original.part?.name ?? '';
      const first = {
        components: [{ name: 'cam', api: 'rdk:component:camera', model: 'rdk:builtin:fake', attributes: {} }],
      };
      const second = { components: [], services: [{ name: 'dm', api: 'rdk:service:data_manager' }] };

      const updated = await app.updateRobotPart(partId, partName, structFromJson(first));
      assert.deepEqual(updated?.robotConfig?.toJson(), first);
      assert.deepEqual(JSON.parse((await app.getRobotPart(partId)).configJson), first);

      await app.updateRobotPart(partId, partName, structFromJson(second));
      assert.deepEqual(JSON.parse((await app.getRobotPart(partId)).configJson), second);

      const history = await app.getRobotPartHistory(partId);
      assert.ok(history.length >= 2, `two edits leave at least two history entries (got ${history.length})`);
      for (const entry of history) {
        assert.equal(entry.part, partId);
        assert.equal(entry.robot, robotId);
        assert.ok(entry.when, 'history entry has a time');
      }
      const oldConfigs = history.map((entry: HistoryEntry) => entry.old?.robotConfig?.toJson() ?? {});
      assert.ok(
        oldConfigs.some((config: unknown) => JSON.stringify(config) === JSON.stringify(first)),
        'the config before the second edit is in the history',
      );
      assert.ok(
        oldConfigs.some((config: unknown) => JSON.stringify(config) === JSON.stringify(originalConfig)),
        'the config before the first edit is in the history',
      );

      // Restore: write back the state recorded in the history entry for the second edit.
      const entry = history.find(
        (candidate: HistoryEntry) =>
          JSON.stringify(candidate.old?.robotConfig?.toJson()) === JSON.stringify(first),
      );
      assert.ok(entry?.old?.robotConfig);
      const restored = await app.updateRobotPart(partId, partName, entry.old.robotConfig);
      assert.deepEqual(restored?.robotConfig?.toJson(), first);
      assert.deepEqual(JSON.parse((await app.getRobotPart(partId)).configJson), first);
      assert.ok((await app.getRobotPartHistory(partId)).length >= 3, 'the restore is itself a history entry');
    });

    test('API keys: create, list, use, rotate, delete; revoked keys get Unauthenticated', async () => {
      const authorization = new appApi.Authorization({
        authorizationType: 'role',
        authorizationId: 'organization_owner',
        resourceType: 'organization',
        resourceId: cloud.organizationId,
        organizationId: cloud.organizationId,
        identityId: '',
        identityType: 'api-key',
      });
      const created = await app.createKey([authorization], 'e2e-key');
      assert.match(
        created.id,
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        'key id is a UUID',
      );
      assert.ok(created.key);

      const keys = await app.listKeys(cloud.organizationId);
      const listed = keys.find((entry: KeyEntry) => entry.apiKey?.id === created.id);
      assert.ok(listed, 'listKeys includes the new key');
      assert.equal(listed.apiKey?.name, 'e2e-key');
      assert.ok(
        listed.authorizations.some(
          (entry: { authorizationId: string; resourceType: string; resourceId: string }) =>
            entry.authorizationId === 'organization_owner' &&
            entry.resourceType === 'organization' &&
            entry.resourceId === cloud.organizationId,
        ),
        'listKeys shows the key’s authorization',
      );
      assert.ok(
        keys.some((entry: KeyEntry) => entry.apiKey?.id === cloud.testCloud.bootstrap.api_key_id),
        'listKeys includes the bootstrap key',
      );

      const keyClient = await cloud.clientFor(created.id, created.key);
      assert.deepEqual(
        (await keyClient.appClient.listOrganizations()).map((organization: Named) => organization.id),
        [cloud.organizationId],
      );

      const rotated = await app.rotateKey(created.id);
      assert.equal(rotated.id, created.id);
      assert.ok(rotated.key && rotated.key !== created.key, 'rotation issues a new secret');
      // A client logged in with the old secret loses access (the server may cache principals briefly).
      await eventually(() => expectRpcError(keyClient.appClient.listOrganizations(), Code.Unauthenticated));
      await expectRpcError(
        cloud.clientFor(created.id, created.key),
        Code.Unauthenticated,
        'old secret login: ',
      );
      const rotatedClient = await cloud.clientFor(created.id, rotated.key);
      assert.equal((await rotatedClient.appClient.listOrganizations()).length, 1);

      await app.deleteKey(created.id);
      await eventually(() =>
        expectRpcError(rotatedClient.appClient.listOrganizations(), Code.Unauthenticated),
      );
      await expectRpcError(
        cloud.clientFor(created.id, rotated.key),
        Code.Unauthenticated,
        'deleted key login: ',
      );
      assert.ok(
        !(await app.listKeys(cloud.organizationId)).some(
          (entry: KeyEntry) => entry.apiKey?.id === created.id,
        ),
      );
    });

    test('unknown ids answer NotFound', async () => {
      await expectRpcError(app.getRobotPart(randomId()), Code.NotFound, 'getRobotPart: ');
      await expectRpcError(app.getRobot(randomId()), Code.NotFound, 'getRobot: ');
      await expectRpcError(
        app.getOrganization(randomId()),
        [Code.NotFound, Code.PermissionDenied],
        'getOrganization: ',
      );
      await expectRpcError(
        app.updateRobotPart(randomId(), 'x', structFromJson({})),
        Code.NotFound,
        'updateRobotPart: ',
      );
      await expectRpcError(app.rotateKey(randomId()), Code.NotFound, 'rotateKey: ');
    });

    test('a bad credential is rejected at login', async () => {
      await expectRpcError(cloud.clientFor(randomId(), 'not-the-secret'), Code.Unauthenticated);
    });
  });
}
