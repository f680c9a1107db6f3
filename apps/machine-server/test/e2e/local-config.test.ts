/**
 * Real machine-server processes with a local configuration file: a failing resource does not block
 * others and is retried every 5 s; a changed file is reloaded (only the changed resource rebuilt) and
 * an invalid one rejected with its field path while the previous config keeps running; shutdown
 * closes dependents first; the command line answers -h, -version, -dump-resources and bad flags.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { type MachineProcess, startMachineProcess } from '../support/machine-process.ts';

const binPath = path.join(import.meta.dirname, '..', '..', 'src', 'bin', 'machine-server.js');
const running: MachineProcess[] = [];
after(async () => {
  for (const machine of running) {
    await machine.stop();
    await machine.cleanup();
    await rm(machine.dir, { recursive: true, force: true });
  }
});

describe('machine-server with a local config', () => {
  it('keeps independent resources running while one fails, retries it, and closes dependents first', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'machine-server-test-'));
    const failFile = path.join(dir, 'broken');
    const closeLog = path.join(dir, 'closed.txt');
    await writeFile(failFile, 'x');
    const record = { record_close_to: closeLog };
    const config = {
      components: [
        { name: 'base', api: 'rdk:component:generic', model: 'fake', attributes: record },
        {
          name: 'mid',
          api: 'rdk:component:generic',
          model: 'fake',
          depends_on: ['base'],
          attributes: record,
        },
        { name: 'top', api: 'rdk:component:generic', model: 'fake', depends_on: ['mid'], attributes: record },
        {
          name: 'flaky',
          type: 'sensor',
          model: 'fake',
          attributes: { fail_while_file_exists: failFile, ...record },
        },
        { name: 'needs-flaky', type: 'generic', model: 'fake', depends_on: ['flaky'], attributes: record },
        { name: 'cam', type: 'camera', model: 'fake' },
        { name: 'ghost', type: 'sensor', model: 'acme:demo:ghost' },
      ],
    };
    const machine = await startMachineProcess({ config, args: ['-debug'], dir });
    running.push(machine);
    const applied = await machine.waitForLine(/initial configuration applied/);
    assert.match(applied, /"built":4,"failed":2/);
    assert.ok(machine.lines.some((l) => /resource build error.*flaky.*fake failure/.test(l)));
    assert.ok(machine.lines.some((l) => /needs-flaky.*waiting for dependencies that are not ready/.test(l)));
    assert.ok(machine.lines.some((l) => /unknown model acme:demo:ghost/.test(l)));

    const mark = machine.lines.length;
    await rm(failFile);
    const retried = await machine.waitForLine(/retry pass rebuilt resources/, 15_000, mark);
    assert.match(retried, /rdk:component:sensor\/flaky/);
    assert.match(retried, /rdk:component:generic\/needs-flaky/);

    const code = await machine.stop();
    assert.equal(code, 0);
    const closed = (await readFile(closeLog, 'utf8')).trim().split('\n');
    const position = (name: string) => closed.findIndex((line) => line.endsWith(`/${name}`));
    assert.ok(position('top') < position('mid') && position('mid') < position('base'), closed.join(', '));
    assert.ok(position('needs-flaky') < position('flaky'), closed.join(', '));
  });

  it('reloads a changed file, rebuilds only what changed, and rejects an invalid one with its path', async () => {
    const config = {
      components: [
        { name: 's1', type: 'sensor', model: 'fake' },
        { name: 's2', type: 'sensor', model: 'fake', depends_on: ['s1'] },
        { name: 'other', type: 'sensor', model: 'fake' },
      ],
    };
    const machine = await startMachineProcess({ config, args: ['-debug'] });
    running.push(machine);
    await machine.waitForLine(/initial configuration applied/);
    let mark = machine.lines.length;
    config.components[0] = {
      name: 's1',
      type: 'sensor',
      model: 'fake',
      readings: undefined,
      ...{ attributes: { readings: { v: 2 } } },
    } as never;
    await writeFile(
      machine.configPath,
      JSON.stringify({ ...config, network: { bind_address: '127.0.0.1:0' } }),
    );
    await machine.waitForLine(/configuration applied/, 15_000, mark);
    const rebuilt = machine.lines.slice(mark).filter((line) => /resource built/.test(line));
    assert.equal(rebuilt.length, 2, rebuilt.join('\n'));
    assert.ok(rebuilt.some((l) => l.includes('sensor/s1')) && rebuilt.some((l) => l.includes('sensor/s2')));

    mark = machine.lines.length;
    await writeFile(
      machine.configPath,
      JSON.stringify({
        components: [{ name: 's1', type: 'sensor', model: 'fake', attributes: { readings: 7 } }],
      }),
    );
    const rejected = await machine.waitForLine(/reconfiguration aborted/, 15_000, mark);
    assert.match(rejected, /components\[0\]\.attributes\.readings: must be an object/);
    assert.ok(!machine.lines.slice(mark).some((l) => /resource built|closing/.test(l)));

    // A file that does not parse: rejected with the parser's position, nothing rebuilt or closed.
    mark = machine.lines.length;
    await writeFile(machine.configPath, '{"components": [ {"name": "s1", ');
    const unparsable = await machine.waitForLine(/the config file is not valid JSON/, 15_000, mark);
    assert.match(unparsable, /\tERROR\t.*JSON/);
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.ok(!machine.lines.slice(mark).some((l) => /resource built|closing/.test(l)));
    // Fixed: the next save applies again (only the resource that changed).
    mark = machine.lines.length;
    await writeFile(
      machine.configPath,
      JSON.stringify({
        components: [...config.components, { name: 'new', type: 'sensor', model: 'fake' }],
        network: { bind_address: '127.0.0.1:0' },
      }),
    );
    await machine.waitForLine(/\tconfiguration applied/, 15_000, mark);
    const built = machine.lines.slice(mark).filter((line) => /resource built/.test(line));
    assert.equal(built.length, 1, built.join('\n'));
    assert.match(built[0] ?? '', /sensor\/new/);

    // An editor's atomic save (write a temp file, rename it over the config) is seen too.
    mark = machine.lines.length;
    const temp = `${machine.configPath}.swp`;
    await writeFile(
      temp,
      JSON.stringify({
        components: [...config.components, { name: 'saved', type: 'sensor', model: 'fake' }],
        network: { bind_address: '127.0.0.1:0' },
      }),
    );
    await rename(temp, machine.configPath);
    await machine.waitForLine(/resource built.*sensor\/saved/, 15_000, mark);
    assert.equal(await machine.stop(), 0);
  });

  it('at start-up: an invalid file waits to be fixed and then applies; a file that does not parse exits 1 naming it', async () => {
    const invalid = {
      components: [{ name: 's1', type: 'sensor', model: 'fake', attributes: { readings: 7 } }],
    };
    const machine = await startMachineProcess({ config: invalid, args: ['-debug'] });
    running.push(machine);
    const rejected = await machine.waitForLine(/reconfiguration aborted/);
    assert.match(rejected, /components\[0\]\.attributes\.readings: must be an object/);
    await machine.waitForLine(/the configuration file is invalid; waiting for it to be fixed/);
    const mark = machine.lines.length;
    await writeFile(
      machine.configPath,
      JSON.stringify({
        components: [{ name: 's1', type: 'sensor', model: 'fake', attributes: { readings: { v: 1 } } }],
        network: { bind_address: '127.0.0.1:0' },
      }),
    );
    const applied = await machine.waitForLine(/initial configuration applied/, 15_000, mark);
    assert.match(applied, /"built":1,"failed":0/);
    assert.equal(await machine.stop(), 0);

    const dir = await mkdtemp(path.join(tmpdir(), 'machine-server-test-'));
    try {
      const file = path.join(dir, 'broken.json');
      await writeFile(file, '{"components": [');
      const run = spawnSync(process.execPath, [binPath, '-config', file, '-ftdc=false', '-disable-mdns'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(run.status, 1, run.stdout + run.stderr);
      assert.match(run.stdout + run.stderr, /-config: .*broken\.json is not valid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers -h, -version, -dump-resources and rejects unknown flags', async () => {
    const node = process.execPath;
    const help = spawnSync(node, [binPath, '-h'], { encoding: 'utf8' });
    assert.equal(help.status, 0);
    for (const flag of ['-config', '-webrtc', '-ftdc', '-dump-resources', '-untrusted-env', '-shareddir']) {
      assert.ok(help.stdout.includes(flag), `help mentions ${flag}`);
    }
    assert.match(help.stdout, /WebRTC is not implemented yet; connections are always direct/);
    const bad = spawnSync(node, [binPath, '-nope'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /flag provided but not defined: -nope/);
    const version = spawnSync(node, [binPath, '-version'], { encoding: 'utf8' });
    assert.equal(version.status, 0);
    assert.match(version.stdout, /"version":"0\.1\.0"/);
    const dumpFile = path.join(path.dirname(binPath), `dump-${process.pid}.json`);
    try {
      const dump = spawnSync(node, [binPath, '-dump-resources', dumpFile], { encoding: 'utf8' });
      assert.equal(dump.status, 0, dump.stderr);
      const entries = JSON.parse(await readFile(dumpFile, 'utf8')) as {
        api: string;
        model: string;
        attribute_schema?: object;
      }[];
      const keys = entries.map((e) => `${e.api} ${e.model}`);
      assert.deepEqual(keys, [...keys].sort());
      assert.ok(keys.includes('rdk:component:camera rdk:builtin:fake'));
      assert.ok(keys.includes('rdk:component:sensor rdk:builtin:host'));
      assert.ok(entries.every((e) => typeof e.attribute_schema === 'object'));
      assert.ok((await stat(dumpFile)).size > 0);
    } finally {
      await rm(dumpFile, { force: true });
    }
    const missing = spawnSync(node, [binPath], { encoding: 'utf8' });
    assert.equal(missing.status, 0);
    assert.match(missing.stdout, /please specify a config file through the -config parameter/);
  });
});
