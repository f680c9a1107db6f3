import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogging } from '../../src/logging/logging-system.ts';
import { openRotatingLogFile } from '../../src/logging/rotating-log-file.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ms-log-file-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const backupName = /^machine-server-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/;

describe('-log-file output with size-based rotation', () => {
  it('rotates an existing file away at start, rotates by size and keeps a bounded number of backups', async () => {
    const sub = await mkdtemp(path.join(dir, 'rotate-'));
    const file = path.join(sub, 'machine-server.log');
    await writeFile(file, 'from the previous run\n');
    let nowMs = Date.UTC(2026, 10, 20, 23, 59, 58, 7);
    const log = openRotatingLogFile({ path: file, maxSizeBytes: 1000, maxBackups: 3, nowMs: () => nowMs++ });
    let names = await readdir(sub);
    assert.equal(names.length, 2);
    const firstBackup = names.find((name) => name !== 'machine-server.log') ?? '';
    assert.equal(firstBackup, 'machine-server-2026-11-20T23-59-58.007.log');
    assert.equal(await readFile(path.join(sub, firstBackup), 'utf8'), 'from the previous run\n');
    assert.equal((await stat(file)).mode & 0o777, 0o600);

    const line = 'x'.repeat(99); // 100 bytes with the newline: 10 per file
    for (let i = 0; i < 95; i++) {
      log.write(`${String(i).padStart(2, '0')}${line.slice(2)}`);
      if (i % 7 === 0) log.flush();
    }
    log.close();
    names = (await readdir(sub)).sort();
    const backups = names.filter((name) => backupName.test(name));
    assert.equal(backups.length, 3, `bounded backups: ${names.join(', ')}`);
    assert.ok(!names.includes(firstBackup), 'the oldest backup was deleted');
    for (const name of names)
      assert.ok((await stat(path.join(sub, name))).size <= 1000, `${name} within the size`);
    const current = (await readFile(file, 'utf8')).trim().split('\n');
    assert.equal(current.length, 5);
    assert.equal(current.at(-1)?.slice(0, 2), '94');
    // The newest backup holds the 10 lines before the current file, in order.
    const newest = (await readFile(path.join(sub, backups.at(-1) ?? ''), 'utf8')).trim().split('\n');
    assert.deepEqual(
      newest.map((text) => text.slice(0, 2)),
      ['80', '81', '82', '83', '84', '85', '86', '87', '88', '89'],
    );
  });

  it('the logging system writes lines there and not to stdout, and close() flushes them', async () => {
    const file = path.join(dir, 'system.log');
    const stdout: string[] = [];
    const logging = createLogging({ logFile: file, writeStdout: (line) => stdout.push(line) });
    logging.loggerFor('rdk.config').info('to the file', { n: 1 });
    await logging.close();
    const text = await readFile(file, 'utf8');
    assert.match(text, /^\S+\tINFO\trdk\.config\t[^\t]+\tto the file\t\{"n":1\}\n$/);
    assert.deepEqual(stdout, []);
  });

  it('creates missing directories; a path that cannot be written is reported and logs go to stdout', async () => {
    const nested = path.join(dir, 'new', 'deeper', 'm.log');
    const created = createLogging({ logFile: nested, writeStdout: () => {} });
    created.loggerFor('rdk').info('in a new directory');
    await created.close();
    assert.match(await readFile(nested, 'utf8'), /in a new directory/);

    const blocker = path.join(dir, 'a-file');
    await writeFile(blocker, '');
    const stdout: string[] = [];
    const logging = createLogging({
      logFile: path.join(blocker, 'm.log'),
      writeStdout: (line) => stdout.push(line),
    });
    logging.loggerFor('rdk').info('still logged');
    await logging.close();
    assert.match(
      stdout[0] ?? '',
      /\tERROR\trdk\t.*-log-file .*a-file\/m\.log: .*; logging to stdout instead$/,
    );
    assert.match(stdout[1] ?? '', /\tstill logged$/);
  });

  it('with stdout kept (VIAM_LOGFILE), lines go to both', async () => {
    const file = path.join(dir, 'both.log');
    const stdout: string[] = [];
    const logging = createLogging({ logFile: file, stdout: true, writeStdout: (line) => stdout.push(line) });
    logging.loggerFor('rdk').warn('both');
    await logging.close();
    assert.equal(stdout.length, 1);
    assert.equal(`${stdout[0]}\n`, await readFile(file, 'utf8'));
  });

  it('a write failure is reported once and never thrown', async () => {
    const sub = await mkdtemp(path.join(dir, 'fail-'));
    const file = path.join(sub, 'm.log');
    const errors: string[] = [];
    const log = openRotatingLogFile({
      path: file,
      maxSizeBytes: 50,
      reportError: (message) => errors.push(message),
    });
    log.write('a'.repeat(40));
    log.flush();
    await rm(sub, { recursive: true, force: true }); // rotation's rename now fails
    log.write('b'.repeat(40));
    assert.doesNotThrow(() => log.flush());
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /m\.log/);
    log.close();
  });
});
