import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import { createAuthedClients } from '../support/connect-clients.ts';
import { startTestCloud, type TestCloud } from '../support/test-cloud.ts';

let t: TestCloud;
before(async () => {
  t = await startTestCloud();
});
after(async () => {
  await t?.stop();
});

for (const transport of ['grpc', 'grpc-web'] as const) {
  test(`createAuthedClients authenticates over ${transport}`, async () => {
    const clients = await createAuthedClients(
      t.url,
      { keyId: t.bootstrap.api_key_id, key: t.bootstrap.api_key },
      transport,
    );
    assert.ok(clients.accessToken.length > 20);
    // An authenticated call reaches the handler (Unimplemented or a real answer), never Unauthenticated.
    try {
      await clients.dataset.listDatasetsByOrganizationID({ organizationId: t.bootstrap.organization_id });
    } catch (error) {
      assert.ok(error instanceof ConnectError);
      assert.notEqual(error.code, Code.Unauthenticated);
    }
  });
}
