import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { robotPb } from '@mcloud/protocol';
import { parseMachineServerFlags } from '../../src/cli/machine-server-flags.ts';
import { robotConfigToJson } from '../../src/cloud/robot-config-json.ts';
import { mergeLocalCloudFields } from '../../src/config/cloud-config-merge.ts';
import { parseMachineConfig } from '../../src/config/machine-config.ts';
import { createFtdcWriter } from '../../src/diagnostics/ftdc-writer.ts';

describe('command line (A6)', () => {
  it('accepts Go flag forms and defaults', () => {
    const parsed = parseMachineServerFlags(
      ['-config', 'a.json', '--debug', '-ftdc=false', '-log-file=x.log'],
      { HOME: '/h' },
    );
    assert.equal(parsed.kind, 'run');
    if (parsed.kind !== 'run') return;
    assert.equal(parsed.flags.config, 'a.json');
    assert.equal(parsed.flags.options.debug, true);
    assert.equal(parsed.flags.options.ftdc, false);
    assert.equal(parsed.flags.options.webrtc, true);
    assert.equal(parsed.flags.options.logFile, 'x.log');
    assert.equal(parsed.flags.options.viamHome, '/h/.viam');
  });

  it('rejects unknown flags, missing arguments and bad booleans', () => {
    assert.equal(parseMachineServerFlags(['-what'], {}).kind, 'error');
    assert.equal(parseMachineServerFlags(['-config'], {}).kind, 'error');
    assert.equal(parseMachineServerFlags(['-debug=maybe'], {}).kind, 'error');
    assert.equal(parseMachineServerFlags(['--help'], {}).kind, 'help');
  });
});

describe('RobotConfig from the cloud', () => {
  it('converts to config-file JSON the parser accepts, and local credentials win', () => {
    const config = create(robotPb.RobotConfigSchema, {
      cloud: {
        id: 'part',
        fqdn: 'f',
        localFqdn: 'lf',
        secret: 'cloud-secret',
        locationSecrets: [{ id: 'l', secret: 's' }],
      },
      components: [
        {
          name: 's1',
          api: 'rdk:component:sensor',
          model: 'rdk:builtin:fake',
          attributes: { readings: { a: 1 } },
          dependsOn: [],
        },
      ],
      modules: [{ name: 'mod', path: '/opt/mod', type: 'local' }],
      auth: { handlers: [{ type: robotPb.CredentialsType.API_KEY, config: { keys: ['k'], k: 'v' } }] },
      revision: 'r7',
    });
    const json = robotConfigToJson(config);
    const merged = mergeLocalCloudFields(json, {
      cloud: { id: 'part', secret: 'local-secret', app_address: 'http://x:1' },
      network: { bind_address: ':1234' },
    });
    const parsed = parseMachineConfig(merged, { source: 'cloud' });
    assert.equal(parsed.revision, 'r7');
    assert.equal(parsed.cloud?.secret, 'local-secret');
    assert.equal(parsed.cloud?.appAddress, 'http://x:1');
    assert.equal(parsed.cloud?.locationSecrets[0]?.secret, 's');
    assert.equal(parsed.network.bindAddress, ':1234');
    assert.deepEqual(parsed.components[0]?.attributes, { readings: { a: 1 } });
    assert.equal(parsed.modules[0]?.executablePath, '/opt/mod');
    assert.equal(parsed.auth.handlers[0]?.type, 'api-key');
  });
});

describe('FTDC files', () => {
  it('writes a schema document, then metric documents with diff bits and big-endian values', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ftdc-'));
    try {
      const writer = createFtdcWriter({ directory: dir });
      await writer.write(new Date(1_000_000), { a: 1, b: 2 });
      await writer.write(new Date(2_000_000), { a: 1, b: 3 });
      const [file] = await readdir(dir);
      const bytes = await readFile(path.join(dir, file as string));
      assert.equal(bytes[0], 0x01);
      const newline = bytes.indexOf(0x0a);
      assert.deepEqual(JSON.parse(bytes.subarray(1, newline).toString()), ['a', 'b']);
      let at = newline + 1;
      assert.equal(bytes[at], 0b110, 'first metric doc: marker bit 0, both fields differ from zero');
      assert.equal(bytes.readBigInt64BE(at + 1), 1000n);
      assert.equal(bytes.readFloatBE(at + 9), 1);
      assert.equal(bytes.readFloatBE(at + 13), 2);
      at += 17;
      assert.equal(bytes[at], 0b100, 'second: only b changed');
      assert.equal(bytes.readFloatBE(at + 9), 3);
      assert.equal(bytes.length, at + 13);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
