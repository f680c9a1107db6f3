import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type AuthedClients,
  createAuthedClients,
  ownerCredentials,
  startTestCloud,
  type TestCloud,
} from '@mcloud/cloud/testing';
import type { appPb } from '@mcloud/protocol';
import { createCloudConnection } from '../../src/cloud/cloud-connection.ts';
import { parseMachineConfig } from '../../src/config/machine-config.ts';
import { createMachineLogging } from '../../src/logging/machine-logging.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

let cloud: TestCloud;
let owner: AuthedClients;
let proxy: TcpProxy;
let viamHome: string;
before(async () => {
  cloud = await startTestCloud();
  owner = await createAuthedClients(cloud.url, ownerCredentials(cloud));
  proxy = await startTcpProxy(Number(new URL(cloud.url).port));
  viamHome = await mkdtemp(path.join(tmpdir(), 'ms-logs-e2e-'));
});
after(async () => {
  await proxy.close();
  await cloud.stop();
  await rm(viamHome, { recursive: true, force: true });
});

async function newPart(name: string) {
  const { id: robotId } = await owner.app.newRobot({ name, location: cloud.bootstrap.location_id });
  const { parts } = await owner.app.getRobotParts({ robotId });
  const main = parts.find((part) => part.mainPart);
  assert.ok(main);
  return { partId: main.id, secret: main.secret };
}

/** Every stored entry of the part, oldest first (GetRobotPartLogs pages newest first). */
async function partLogs(partId: string): Promise<appPb.GetRobotPartLogsResponse['logs']> {
  const pages: appPb.GetRobotPartLogsResponse['logs'][] = [];
  let pageToken = '';
  do {
    const page = await owner.app.getRobotPartLogs({ id: partId, pageToken, limit: 1000n });
    pages.push(page.logs);
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return pages.flat().reverse();
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('machine logs reach the real cloud (RobotService.Log → GetRobotPartLogs / TailRobotPartLogs)', () => {
  it('uploads with levels from the config; during an outage spools and later delivers every entry exactly once', async () => {
    const { partId, secret } = await newPart('logging-machine');
    const connection = createCloudConnection({ appAddress: proxy.url, credentials: { partId, secret } });
    const stdout: string[] = [];
    const machine = createMachineLogging({
      server: { debug: false, viamHome, env: {} },
      writeStdout: (line) => stdout.push(line),
      upload: { retryIntervalMs: 500, sendTimeoutMs: 3000 },
    });
    machine.applyConfig(
      parseMachineConfig(
        {
          log: [{ pattern: 'rdk.resource_manager.*', level: 'warn' }],
          components: [
            { name: 's1', api: 'rdk:component:sensor', model: 'fake', log_configuration: { level: 'debug' } },
            { name: 's2', api: 'rdk:component:sensor', model: 'fake' },
          ],
        },
        { source: 'local' },
      ),
    );
    machine.attachCloud(connection, partId);
    const { logging } = machine;
    const s1 = logging.loggerFor('rdk.resource_manager.rdk:component:sensor/s1');
    const s2 = logging.loggerFor('rdk.resource_manager.rdk:component:sensor/s2');

    // TailRobotPartLogs: probes are logged until the stream (registered asynchronously) carries one.
    const tail = owner.app.tailRobotPartLogs({ id: partId, filter: 'tail probe' })[Symbol.asyncIterator]();
    const tailed = tail.next();
    let probing = true;
    void tailed.finally(() => {
      probing = false;
    });
    for (let probe = 0; probing && probe < 100; probe++) {
      logging.loggerFor('rdk.test').info(`tail probe ${probe}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const first = await tailed;
    assert.equal(first.done, false);
    assert.match(first.value.logs[0]?.message ?? '', /^tail probe \d+$/);
    await tail.return?.();

    s1.debug('s1 debug passes (log_configuration beats the log array)', { reading: 21.5 });
    s2.info('s2 info is below the warn pattern');
    s2.warn('s2 warn passes');
    for (let i = 0; i < 1200; i++) s1.info(`online ${i}`);

    await waitFor('the online entries', async () =>
      (await partLogs(partId)).some((entry) => entry.message === 'online 1199'),
    );

    await proxy.cut();
    for (let i = 0; i < 1500; i++) s1.info(`offline ${i}`);
    await waitFor('the upload to notice the outage', () => logging.uploadStats()?.online === false);
    await waitFor('the offline entries on disk', () => (logging.uploadStats()?.spooled ?? 0) >= 1500);
    await proxy.restore();
    await waitFor('the spool to drain', async () =>
      (await partLogs(partId)).some((entry) => entry.message === 'offline 1499'),
    );
    await machine.close(AbortSignal.timeout(10_000));
    connection.close();

    const stored = await partLogs(partId);
    const messages = stored
      .filter((entry) => entry.loggerName.startsWith('rdk.resource_manager.'))
      .map((entry) => entry.message);
    assert.deepEqual(messages, [
      's1 debug passes (log_configuration beats the log array)',
      's2 warn passes',
      ...Array.from({ length: 1200 }, (_, i) => `online ${i}`),
      ...Array.from({ length: 1500 }, (_, i) => `offline ${i}`),
    ]);
    const others = stored.filter((entry) => !entry.loggerName.startsWith('rdk.resource_manager.'));
    assert.ok(
      others.some(
        (entry) => entry.loggerName === 'rdk.config' && entry.message.startsWith('The log patterns changed'),
      ),
      'entries logged before the cloud connection are uploaded too',
    );
    assert.equal(
      others.filter((entry) => entry.message.startsWith('error logging to network')).length,
      1,
      'the outage is reported once (and uploaded after it)',
    );
    const debugEntry = stored.find((entry) => entry.level === 'debug');
    assert.equal(debugEntry?.level, 'debug');
    assert.equal(debugEntry?.loggerName, 'rdk.resource_manager.rdk:component:sensor/s1');
    assert.equal(debugEntry?.caller?.Defined, true);
    assert.deepEqual(
      debugEntry?.fields.map((field) => [field.Key, field.String]),
      [['reading', '21.5']],
    );
    assert.equal(logging.uploadStats()?.dropped, 0);
    assert.deepEqual(await readdir(path.join(viamHome, 'log-spool', partId)), []);
  });
});
