import assert from 'node:assert/strict';
import { Code, ConnectError } from '@connectrpc/connect';
import { createOrganizationWithOwnerKey } from '../../src/domain/fleet/organization-setup.ts';
import { withTransaction } from '../../src/infra/postgres/database.ts';
import type { TestCloud } from './test-cloud.ts';

/** Asserts that `call` fails with the given gRPC code (and, optionally, a message matching `message`). */
export async function expectCode(
  call: Promise<unknown>,
  code: Code,
  message?: RegExp,
): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof ConnectError, `expected a ConnectError, got ${String(error)}`);
    assert.equal(Code[error.code], Code[code], `unexpected code: ${error.message}`);
    if (message) assert.match(error.message, message);
    return error;
  }
  assert.fail(`expected ${Code[code]}, but the call succeeded`);
}

/** A second organization with its own owner key, made directly in the database (as `mcloud admin create-org`). */
export async function createForeignOrganization(t: TestCloud, name = 'foreign') {
  return withTransaction(t.cloud.deps.db, (client) => createOrganizationWithOwnerKey(client, { name }));
}

export function ownerCredentials(t: TestCloud) {
  return { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key };
}

/** One role authorization of an API key (`CreateKey.authorizations`), e.g. `('robot', 'owner', robotId, orgId)`. */
export function apiKeyRole(
  resourceType: 'organization' | 'location' | 'robot',
  roleName: 'owner' | 'operator',
  resourceId: string,
  organizationId: string,
) {
  return {
    authorizationType: 'role',
    authorizationId: `${resourceType}_${roleName}`,
    resourceType,
    resourceId,
    organizationId,
    identityId: '',
    identityType: 'api-key',
  };
}
