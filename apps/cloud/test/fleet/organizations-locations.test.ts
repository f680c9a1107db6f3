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
  owner = await createAuthedClients(t.url, ownerCredentials(t), 'grpc-web');
  orgId = t.bootstrap.organization_id;
});
after(async () => {
  await t?.stop();
});

test('organizations: list, get, update, namespace, metadata, create and delete', async () => {
  const { organizations } = await owner.app.listOrganizations({});
  assert.deepEqual(
    organizations.map((o) => o.id),
    [orgId],
  );
  const { organization } = await owner.app.getOrganization({ organizationId: orgId });
  assert.equal(organization?.name, 'default');
  assert.ok(organization?.createdOn);

  const renamed = await owner.app.updateOrganization({ organizationId: orgId, name: 'Acme Robotics' });
  assert.equal(renamed.organization?.name, 'Acme Robotics');
  assert.equal(
    (await owner.app.getOrganizationNamespaceAvailability({ publicNamespace: 'acme', organizationId: orgId }))
      .available,
    true,
  );
  const withNamespace = await owner.app.updateOrganizationNamespace({
    organizationId: orgId,
    newPublicNamespace: 'acme',
  });
  assert.equal(withNamespace.organization?.publicNamespace, 'acme');
  await expectCode(
    owner.app.updateOrganizationNamespace({ organizationId: orgId, newPublicNamespace: 'Not OK!' }),
    Code.InvalidArgument,
    /public_namespace/,
  );

  const created = await owner.app.createOrganization({ name: 'second' });
  const secondId = created.organization?.id as string;
  assert.equal(
    (
      await owner.app.getOrganizationNamespaceAvailability({
        publicNamespace: 'acme',
        organizationId: secondId,
      })
    ).available,
    false,
  );
  await expectCode(
    owner.app.updateOrganization({ organizationId: secondId, publicNamespace: 'acme' }),
    Code.AlreadyExists,
  );
  // The creating key owns the new organization too (a fresh token sees it).
  const again = await createAuthedClients(t.url, ownerCredentials(t));
  assert.equal((await again.app.listOrganizations({})).organizations.length, 2);

  await owner.app.updateOrganizationMetadata({ organizationId: orgId, data: { team: 'blue', n: 3 } });
  assert.deepEqual((await owner.app.getOrganizationMetadata({ organizationId: orgId })).data, {
    team: 'blue',
    n: 3,
  });

  await again.app.deleteOrganization({ organizationId: secondId });
  await expectCode(again.app.getOrganization({ organizationId: secondId }), Code.NotFound);
  await expectCode(
    owner.app.getOrganization({ organizationId: 'nope' }),
    Code.InvalidArgument,
    /organization_id/,
  );
});

test('members: add by email, list with emails, user id by email, remove', async () => {
  const invite = await owner.app.createOrganizationInvite({
    organizationId: orgId,
    email: 'Ada@Example.com',
    authorizations: [
      {
        authorizationType: 'role',
        authorizationId: 'organization_owner',
        resourceType: 'organization',
        resourceId: orgId,
        organizationId: orgId,
      },
    ],
  });
  assert.equal(invite.invite?.email, 'ada@example.com');
  await owner.app.createOrganizationInvite({
    organizationId: orgId,
    email: 'bob@example.com',
    authorizations: [],
  });
  await expectCode(
    owner.app.createOrganizationInvite({
      organizationId: orgId,
      email: 'bob@example.com',
      authorizations: [],
    }),
    Code.AlreadyExists,
  );
  await expectCode(
    owner.app.createOrganizationInvite({ organizationId: orgId, email: 'not-an-email', authorizations: [] }),
    Code.InvalidArgument,
    /email/,
  );

  const listed = await owner.app.listOrganizationMembers({ organizationId: orgId });
  assert.deepEqual(listed.members.map((m) => m.emails[0]).sort(), ['ada@example.com', 'bob@example.com']);
  const { userId } = await owner.app.getUserIDByEmail({ email: 'bob@example.com' });
  assert.ok(listed.members.some((m) => m.userId === userId && m.dateAdded));
  await owner.app.deleteOrganizationMember({ organizationId: orgId, userId });
  assert.equal((await owner.app.listOrganizationMembers({ organizationId: orgId })).members.length, 1);
  await expectCode(owner.app.getUserIDByEmail({ email: 'bob@example.com' }), Code.NotFound);
});

test('locations: create with a secret, update, list, auth, secrets, metadata, delete', async () => {
  const { location } = await owner.app.createLocation({ organizationId: orgId, name: 'lab' });
  assert.ok(location);
  assert.equal(location.auth?.secrets.length, 1);
  assert.equal(location.auth?.secret, location.auth?.secrets[0]?.secret);
  assert.equal(location.organizations[0]?.organizationId, orgId);

  const child = await owner.app.createLocation({
    organizationId: orgId,
    name: 'bench',
    parentLocationId: location.id,
  });
  assert.equal(child.location?.parentLocationId, location.id);
  await expectCode(
    owner.app.updateLocation({ locationId: location.id, parentLocationId: child.location?.id }),
    Code.InvalidArgument,
    /cycle/,
  );
  const updated = await owner.app.updateLocation({ locationId: location.id, name: 'Lab 2', region: 'eu' });
  assert.equal(updated.location?.name, 'Lab 2');
  assert.equal(updated.location?.config?.region, 'eu');

  const names = (await owner.app.listLocations({ organizationId: orgId })).locations.map((l) => l.name);
  assert.ok(names.includes('Lab 2') && names.includes('bench'));

  const auth = await owner.app.createLocationSecret({ locationId: location.id });
  assert.equal(auth.auth?.secrets.length, 2);
  await expectCode(
    owner.app.createLocationSecret({ locationId: location.id }),
    Code.FailedPrecondition,
    /2 enabled secrets/,
  );
  const first = auth.auth?.secrets[0]?.id as string;
  await owner.app.deleteLocationSecret({ locationId: location.id, secretId: first });
  const after = await owner.app.locationAuth({ locationId: location.id });
  assert.equal(after.auth?.secrets.length, 1);
  assert.notEqual(after.auth?.secrets[0]?.id, first);
  assert.equal(after.auth?.secret, after.auth?.secrets[0]?.secret);

  await owner.app.updateLocationMetadata({ locationId: location.id, data: { floor: 2 } });
  assert.deepEqual((await owner.app.getLocationMetadata({ locationId: location.id })).data, { floor: 2 });

  const { id: robotId } = await owner.app.newRobot({ name: 'arm', location: child.location?.id as string });
  await expectCode(
    owner.app.deleteLocation({ locationId: child.location?.id as string }),
    Code.FailedPrecondition,
    /machine/,
  );
  await owner.app.deleteRobot({ id: robotId });
  await owner.app.deleteLocation({ locationId: child.location?.id as string });
  await owner.app.deleteLocation({ locationId: location.id });
  await expectCode(owner.app.getLocation({ locationId: location.id }), Code.NotFound);
});

test('foreign organizations and their locations answer NotFound', async () => {
  const foreign = await createForeignOrganization(t);
  await expectCode(owner.app.getOrganization({ organizationId: foreign.organizationId }), Code.NotFound);
  await expectCode(owner.app.getLocation({ locationId: foreign.locationId }), Code.NotFound);
  await expectCode(owner.app.listLocations({ organizationId: foreign.organizationId }), Code.NotFound);
  await expectCode(owner.app.newRobot({ name: 'x', location: foreign.locationId }), Code.NotFound);
  await expectCode(owner.app.listRobots({ locationId: foreign.locationId }), Code.NotFound);
  const foreignClient = await createAuthedClients(t.url, { keyId: foreign.apiKeyId, key: foreign.apiKey });
  await expectCode(foreignClient.app.getLocation({ locationId: t.bootstrap.location_id }), Code.NotFound);
});
