/**
 * A module whose parent goes away stops by itself (two failed parent checks in a row), so a killed
 * machine-server does not leave module processes behind.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createClient } from '@connectrpc/connect';
import { createSocketTransport, parseModuleArgs, startModule, startSocketServer } from '@mcloud/module-sdk';
import { machineRobotPb, modulePb } from '@mcloud/protocol';

test('the module stops when its parent is gone', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'module-sdk-parent-loss-'));
  try {
    const parentPath = join(dir, 'parent.sock');
    const parent = await startSocketServer({
      address: parentPath,
      routes: (router) =>
        router.service(machineRobotPb.RobotService, { resourceNames: () => ({}), log: () => ({}) }),
    });
    const socket = join(dir, 'm.sock');
    const running = await startModule(
      { models: [], parentCheckIntervalMs: 100 },
      parseModuleArgs([socket], { VIAM_MODULE_NAME: 'lonely' }),
    );
    const connection = createSocketTransport(socket);
    const ready = await createClient(modulePb.ModuleService, connection.transport).ready({
      rawParentAddress: parentPath,
    });
    assert.equal(ready.ready, true);
    connection.close();
    const lostAt = Date.now();
    await parent.close(0);
    await running.stopped;
    assert.ok(Date.now() - lostAt < 3000, `stopped ${Date.now() - lostAt} ms after the parent went away`);
    assert.equal(existsSync(socket), false);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
