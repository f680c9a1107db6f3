/**
 * `-allow-insecure-creds` (machine-runtime.md A6): the machine's credentials go to the cloud over
 * plaintext `http://` only to a local address unless the flag is given. A real cloud listens on this
 * host's non-loopback address; without the flag the machine-server refuses to start (naming the field),
 * with it the machine boots from that cloud.
 */
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { after, before, test } from 'node:test';
import { startTestCloud, type TestCloud } from '@mcloud/cloud/testing';
import {
  type CloudPart,
  createCloudPart,
  credentialsFile,
  setPartConfig,
} from '../support/cloud-machine-fixtures.ts';
import { type MachineProcess, startMachineProcess } from '../support/machine-process.ts';

const address = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;

let t: TestCloud | undefined;
let part: CloudPart;
/** The cloud on the non-loopback address (its own `url` names 127.0.0.1). */
let url: string;
const machines: MachineProcess[] = [];

before(async () => {
  if (!address) return;
  t = await startTestCloud({ configure: (config) => ({ ...config, host: address }) });
  url = `http://${address}:${new URL(t.url).port}`;
  part = await createCloudPart({ url, bootstrap: t.bootstrap }, 'insecure-creds');
  await setPartConfig(part, { components: [{ name: 'thermo', api: 'rdk:component:sensor', model: 'fake' }] });
});
after(async () => {
  for (const machine of machines) {
    await machine.stop(5000);
    await machine.cleanup();
  }
  await t?.stop();
});

test(
  'credentials over plaintext to a non-local cloud need -allow-insecure-creds',
  { skip: !address },
  async () => {
    const refused = await startMachineProcess({
      config: credentialsFile(url, part),
      args: ['-disable-mdns'],
    });
    machines.push(refused);
    const exitCode = await new Promise((resolve) => refused.child.once('exit', resolve));
    assert.equal(exitCode, 1);
    assert.ok(
      refused.lines.some((line) =>
        line.includes(
          `cloud.app_address: uses plaintext http to a non-local host; pass -allow-insecure-creds to send the machine credentials over it (got \\"${url}\\")`,
        ),
      ),
      refused.lines.join('\n'),
    );

    const allowed = await startMachineProcess({
      config: credentialsFile(url, part),
      args: ['-allow-insecure-creds', '-disable-mdns'],
    });
    machines.push(allowed);
    const applied = await allowed.waitForLine(/initial configuration applied/, 30_000);
    assert.match(applied, /"built":1,"failed":0/);
    assert.equal(await allowed.stop(), 0);
  },
);
