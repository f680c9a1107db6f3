/**
 * Test helpers other workspaces may use (`@mcloud/cloud/testing`): a real cloud on a random port with a
 * fresh database, and authenticated Connect clients.
 */
export {
  type AuthedClients,
  authenticate,
  clientsWithToken,
  createAuthedClients,
  createTestTransport,
  type TestCredentials,
  type TestTransportKind,
} from './connect-clients.ts';
export { apiKeyRole, createForeignOrganization, expectCode, ownerCredentials } from './fleet-fixtures.ts';
export { startTestCloud, type TestCloud } from './test-cloud.ts';
export { createTestDatabase, type TestDatabase } from './test-database.ts';
