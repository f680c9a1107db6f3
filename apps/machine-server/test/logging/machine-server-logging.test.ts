/**
 * A real cloud and a real machine-server process: log patterns from the cloud config (an invalid one
 * skipped with a warning), `-log-file` (the previous file rotated away at start, stdout silent), and
 * logs reaching the cloud, including those written during shutdown.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CloudPart, fakeSensors } from '../support/cloud-machine-fixtures.ts';
import { useCloudForMachines } from '../support/cloud-machine-harness.ts';

const harness = useCloudForMachines();
let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ms-logging-process-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function cloudMessages(
  part: CloudPart,
): Promise<{ level: string; loggerName: string; message: string; fields: string }[]> {
  const all: { level: string; loggerName: string; message: string; fields: string }[] = [];
  let pageToken = '';
  do {
    const page = await part.owner.app.getRobotPartLogs({ id: part.partId, pageToken, limit: 1000n });
    all.push(
      ...page.logs.map(({ level, loggerName, message, fields }) => ({
        level,
        loggerName,
        message,
        fields: JSON.stringify(fields),
      })),
    );
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return all.reverse();
}

describe('machine-server process logging', () => {
  it('applies log patterns from the cloud, writes -log-file (rotated at start) and uploads to the cloud', async () => {
    const part = await harness.createPart('logging-process', {
      log: [
        { pattern: 'rdk.resource_manager', level: 'debug' },
        { pattern: 'rdk.(', level: 'debug' },
      ],
      components: fakeSensors(2),
    });
    const logFile = path.join(dir, 'machine-server.log');
    await writeFile(logFile, 'a line of the previous run\n');
    const machine = await harness.startPartMachine(part, {
      refreshInterval: '1s',
      args: ['-log-file', logFile],
      env: { MCLOUD_MACHINE_CONNECTION: 'off' },
    });

    const text = await waitFor('the configuration applied in the log file', async () => {
      const content = await readFile(logFile, 'utf8').catch(() => '');
      return content.includes('initial configuration applied') ? content : undefined;
    });
    const lines = text.trim().split('\n');
    for (const line of lines) {
      assert.match(
        line,
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\t(DEBUG|INFO|WARN|ERROR)\t\S+\t[^\t]+:\d+\t/,
      );
    }
    const columns = lines.map((line) => line.split('\t'));
    assert.ok(
      columns.some(
        ([, level, name, , message]) =>
          level === 'DEBUG' && name === 'rdk.resource_manager' && message === 'resource built',
      ),
      'the debug pattern for rdk.resource_manager applies',
    );
    assert.ok(
      !columns.some(([, level, name]) => level === 'DEBUG' && name === 'rdk.config'),
      'other loggers stay at info',
    );
    assert.ok(
      columns.some(
        ([, level, , , message, fields]) =>
          level === 'WARN' && message === 'Log regex did not compile' && fields?.includes('log[1].pattern'),
      ),
      'the invalid pattern is skipped with a warning',
    );
    const backups = (await readdir(dir)).filter((name) => /^machine-server-.+\.log$/.test(name));
    assert.equal(backups.length, 1);
    assert.equal(await readFile(path.join(dir, backups[0] ?? ''), 'utf8'), 'a line of the previous run\n');
    assert.ok(
      !machine.lines.some((line) => line.includes('initial configuration applied')),
      'with -log-file, stdout carries no log lines',
    );

    await waitFor('the start-up logs in the cloud', async () => {
      const stored = await cloudMessages(part);
      return stored.some((entry) => entry.message === 'resource built' && entry.level === 'debug')
        ? true
        : undefined;
    });

    assert.equal(await machine.stop(), 0);
    const stored = await waitFor(
      'the shutdown logs in the cloud',
      async () => {
        const entries = await cloudMessages(part);
        return entries.some((entry) => entry.message === 'shutdown complete') ? entries : undefined;
      },
      15_000,
    );
    const messages = stored.map((entry) => entry.message);
    assert.ok(messages.includes('machine-server starting'));
    assert.ok(messages.includes('Log regex did not compile'));
    assert.equal(messages.filter((message) => message === 'resource built').length, 2, 'one per sensor');
    // Entries with the same message (one "network check" per check) differ in their fields.
    const entries = stored.map((entry) => `${entry.loggerName} ${entry.message} ${entry.fields}`);
    const repeated = entries.filter((entry, i) => entries.indexOf(entry) !== i);
    assert.deepEqual(repeated, [], 'no entry stored twice');
  });
});
