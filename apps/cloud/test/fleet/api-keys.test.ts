import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Code } from '@connectrpc/connect';
import { type AuthedClients, createAuthedClients } from '../support/connect-clients.ts';
import { createForeignOrganization, expectCode, ownerCredentials } from '../support/fleet-fixtures.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let t: TestCloud;
let owner: AuthedClients;
let orgId: string;
before(async () => {
  t = await startTestCloud();
  owner = await createAuthedClients(t.url, ownerCredentials(t));
  orgId = t.bootstrap.organization_id;
});
after(async () => {
  await t?.stop();
});

const role = (resourceType: string, roleName: string, resourceId: string, organizationId: string) => ({
  authorizationType: 'role',
  authorizationId: `${resourceType}_${roleName}`,
  resourceType,
  resourceId,
  organizationId,
});

test('CreateKey, ListKeys without secrets, RenameKey, GetRobotAPIKeys', async () => {
  const { id: robotId } = await owner.app.newRobot({ name: 'keyed', location: t.bootstrap.location_id });
  const created = await owner.app.createKey({
    name: 'ci',
    authorizations: [role('robot', 'operator', robotId, orgId)],
  });
  assert.match(created.id, /^[0-9a-f-]{36}$/);
  assert.ok(created.key.length >= 32);
  const stored = await t.cloud.deps.db.query('SELECT secret_hash FROM api_keys WHERE id = $1', [created.id]);
  assert.ok(!stored.rows[0]?.secret_hash.toString('utf8').includes(created.key));

  const { apiKeys } = await owner.app.listKeys({ orgId });
  const listed = apiKeys.find((k) => k.apiKey?.id === created.id);
  assert.equal(listed?.apiKey?.name, 'ci');
  assert.equal(listed?.apiKey?.key, '');
  assert.ok(apiKeys.every((k) => k.apiKey?.key === ''));
  assert.deepEqual(
    listed?.authorizations.map((a) => [a.authorizationId, a.resourceType, a.resourceId, a.orgId]),
    [['robot_operator', 'robot', robotId, orgId]],
  );
  assert.deepEqual(await owner.app.renameKey({ id: created.id, name: 'ci-2' }).then((r) => [r.id, r.name]), [
    created.id,
    'ci-2',
  ]);
  const robotKeys = await owner.app.getRobotAPIKeys({ robotId });
  assert.deepEqual(
    robotKeys.apiKeys.map((k) => k.apiKey?.id),
    [created.id],
  );

  // The robot-scoped key sees its machine and nothing else.
  const robotKey = await createAuthedClients(t.url, { keyId: created.id, key: created.key });
  assert.equal((await robotKey.app.getRobot({ id: robotId })).robot?.id, robotId);
  assert.deepEqual(
    (await robotKey.app.listRobots({ locationId: t.bootstrap.location_id })).robots.map((r) => r.id),
    [robotId],
  );
  await expectCode(robotKey.app.deleteRobot({ id: robotId }), Code.PermissionDenied);
});

test('CreateKey validates every authorization and forbids privilege escalation', async () => {
  await expectCode(
    owner.app.createKey({ name: 'x', authorizations: [] }),
    Code.InvalidArgument,
    /authorizations/,
  );
  await expectCode(
    owner.app.createKey({
      name: 'x',
      authorizations: [{ ...role('organization', 'owner', orgId, orgId), authorizationType: 'grant' }],
    }),
    Code.InvalidArgument,
    /authorizations\[0\]\.authorization_type/,
  );
  await expectCode(
    owner.app.createKey({
      name: 'x',
      authorizations: [
        { ...role('organization', 'owner', orgId, orgId), authorizationId: 'organization_admin' },
      ],
    }),
    Code.InvalidArgument,
    /authorizations\[0\]\.authorization_id/,
  );
  await expectCode(
    owner.app.createKey({ name: 'x', authorizations: [role('fleet', 'owner', orgId, orgId)] }),
    Code.InvalidArgument,
    /resource_type/,
  );
  await expectCode(
    owner.app.createKey({ name: 'x', authorizations: [role('location', 'owner', 'nosuchloc1', orgId)] }),
    Code.NotFound,
  );
  const foreign = await createForeignOrganization(t);
  await expectCode(
    owner.app.createKey({
      name: 'x',
      authorizations: [role('organization', 'owner', foreign.organizationId, foreign.organizationId)],
    }),
    Code.NotFound,
  );

  // An operator key cannot create keys (it is not owner over anything).
  const operator = await owner.app.createKey({
    name: 'op',
    authorizations: [role('organization', 'operator', orgId, orgId)],
  });
  const operatorClient = await createAuthedClients(t.url, { keyId: operator.id, key: operator.key });
  await expectCode(
    operatorClient.app.createKey({
      name: 'sneaky',
      authorizations: [role('organization', 'operator', orgId, orgId)],
    }),
    Code.PermissionDenied,
  );
  await expectCode(operatorClient.app.listKeys({ orgId }), Code.PermissionDenied);
  await expectCode(
    operatorClient.app.newRobot({ name: 'no', location: t.bootstrap.location_id }),
    Code.PermissionDenied,
  );
  assert.equal((await operatorClient.app.getOrganization({ organizationId: orgId })).organization?.id, orgId);

  // A location owner can grant on its location but not on the organization.
  const locationOwner = await owner.app.createKey({
    name: 'loc',
    authorizations: [role('location', 'owner', t.bootstrap.location_id, orgId)],
  });
  const locationClient = await createAuthedClients(t.url, {
    keyId: locationOwner.id,
    key: locationOwner.key,
  });
  await locationClient.app.createKey({
    name: 'ok',
    authorizations: [role('location', 'operator', t.bootstrap.location_id, orgId)],
  });
  await expectCode(
    locationClient.app.createKey({
      name: 'escalate',
      authorizations: [role('organization', 'owner', orgId, orgId)],
    }),
    Code.PermissionDenied,
  );
});

test('RotateKey and DeleteKey revoke existing tokens; CreateKeyFromExistingKeyAuthorizations copies grants', async () => {
  const created = await owner.app.createKey({
    name: 'rotating',
    authorizations: [role('organization', 'operator', orgId, orgId)],
  });
  const before = await createAuthedClients(t.url, { keyId: created.id, key: created.key }, 'grpc-web');
  await before.app.getOrganization({ organizationId: orgId });

  const rotated = await owner.app.rotateKey({ id: created.id });
  assert.equal(rotated.id, created.id);
  assert.notEqual(rotated.key, created.key);
  await expectCode(before.app.getOrganization({ organizationId: orgId }), Code.Unauthenticated);
  await expectCode(createAuthedClients(t.url, { keyId: created.id, key: created.key }), Code.Unauthenticated);
  const after = await createAuthedClients(t.url, { keyId: created.id, key: rotated.key });
  await after.app.getOrganization({ organizationId: orgId });

  const copy = await owner.app.createKeyFromExistingKeyAuthorizations({ id: created.id });
  assert.notEqual(copy.id, created.id);
  const listed = (await owner.app.listKeys({ orgId })).apiKeys.find((k) => k.apiKey?.id === copy.id);
  assert.deepEqual(
    listed?.authorizations.map((a) => a.authorizationId),
    ['organization_operator'],
  );

  await owner.app.deleteKey({ id: created.id });
  await expectCode(after.app.getOrganization({ organizationId: orgId }), Code.Unauthenticated);
  await expectCode(owner.app.deleteKey({ id: created.id }), Code.NotFound);
  assert.ok(!(await owner.app.listKeys({ orgId })).apiKeys.some((k) => k.apiKey?.id === created.id));
});

test('unimplemented AppService RPCs answer Unimplemented', async () => {
  await expectCode(owner.app.listFragments({ organizationId: orgId }), Code.Unimplemented);
});
