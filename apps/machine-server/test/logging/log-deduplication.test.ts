import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createLogDeduplicator,
  deduplicationKey,
  formatGoDuration,
} from '../../src/logging/log-deduplicator.ts';
import type { LogEntry } from '../../src/logging/log-entry.ts';
import { createLogging, type LogConfig } from '../../src/logging/logging-system.ts';
import { manualClock } from './manual-clock.ts';

function entry(
  message: string,
  fields: LogEntry['fields'] = {},
  level: LogEntry['level'] = 'info',
): LogEntry {
  return { timeMs: 0, level, loggerName: 'rdk.x', message, fields };
}

function setup(config: Partial<LogConfig> = {}, debugFlag = false) {
  const time = manualClock();
  const lines: string[] = [];
  const logging = createLogging({ clock: time.clock, debugFlag, writeStdout: (line) => lines.push(line) });
  logging.setConfig({ debug: false, log: [], disableLogDeduplication: false, resourceLevels: [], ...config });
  lines.length = 0;
  const messages = () => lines.map((line) => line.split('\t')[4]);
  return { time, logging, lines, messages };
}

describe('de-duplication of noisy logs (A4.4 with 3 outputs in 10 s)', () => {
  it('outputs 3, then one suppression notice, then nothing for the rest of the window', () => {
    const { time, logging, messages } = setup();
    const logger = logging.loggerFor('rdk.noisy');
    for (let i = 0; i < 10; i++) {
      logger.warn('disk almost full', { percent: 91 });
      time.advance(500);
    }
    assert.deepEqual(messages(), [
      'disk almost full',
      'disk almost full',
      'disk almost full',
      'Message logged 3 times; suppressing for rest of window (10s): disk almost full',
    ]);
  });

  it('after the window ends, the next write first emits the summary with the window total', () => {
    const { time, logging, messages, lines } = setup();
    const logger = logging.loggerFor('rdk.noisy');
    for (let i = 0; i < 7; i++) logger.error('sensor read failed');
    time.advance(10_001);
    logger.info('something else');
    logger.error('sensor read failed');
    assert.deepEqual(messages().slice(4), [
      'Message logged 7 times in past 10s: sensor read failed',
      'something else',
      'sensor read failed',
    ]);
    assert.equal(lines[4]?.split('\t')[1], 'ERROR', 'the summary keeps the level of the repeated entry');
    assert.match(
      lines[4]?.split('\t')[3] ?? '',
      /^logging\/log-deduplication\.test\.ts:\d+$/,
      'and a caller',
    );
  });

  it('the window is fixed, not sliding: 3 writes late in one window and 3 early in the next all pass', () => {
    const { time, logging, messages } = setup();
    const logger = logging.loggerFor('rdk.noisy');
    logger.info('first');
    time.advance(9_000);
    for (let i = 0; i < 2; i++) logger.info('tick');
    time.advance(1_001);
    for (let i = 0; i < 3; i++) logger.info('tick');
    assert.equal(messages().filter((message) => message === 'tick').length, 5);
  });

  it('counts per logger and per message+fields; ignored fields do not split a key, level does not count', () => {
    const { logging, messages } = setup();
    const a = logging.loggerFor('rdk.a');
    const b = logging.loggerFor('rdk.b');
    for (let i = 0; i < 3; i++) {
      a.info('same');
      b.info('same');
    }
    a.warn('same', { log_ts: 1 });
    a.info('same', { value: 1 });
    assert.deepEqual(messages().slice(6), [
      'Message logged 3 times; suppressing for rest of window (10s): same',
      'same',
    ]);
    assert.equal(deduplicationKey(entry('m', { a: 1, 'grpc.time_ms': 5, s: '' })), 'm a 1 s undefined');
    assert.equal(deduplicationKey(entry('m', { o: { x: [1] } })), 'm o {"x":[1]}');
  });

  it('is off with disable_log_deduplication, in debug mode, and for a logger at debug level', () => {
    for (const variant of [
      setup({ disableLogDeduplication: true }),
      setup({ debug: true }),
      setup({}, true),
      setup({ log: [{ pattern: 'rdk.noisy', level: 'debug' }] }),
    ]) {
      const logger = variant.logging.loggerFor('rdk.noisy');
      for (let i = 0; i < 6; i++) logger.info('again');
      assert.equal(variant.messages().filter((message) => message === 'again').length, 6);
    }
    const quiet = setup();
    for (let i = 0; i < 6; i++)
      quiet.logging.loggerFor('rdk.activity', { neverDeduplicate: true }).info('event');
    assert.equal(quiet.messages().length, 6, 'never-deduplicated loggers pass everything');
  });

  it('the activity logger (rdk.activity) is always emitted and never de-duplicated', () => {
    const { logging, messages } = setup({ log: [{ pattern: '*', level: 'error' }] });
    const activity = logging.loggerFor('rdk').child('activity');
    for (let i = 0; i < 5; i++) activity.info('', { activity: 'reconfigure', event: 'start' });
    assert.equal(messages().length, 5);
  });

  it('announces when de-duplication is turned off', () => {
    const { logging, messages } = setup();
    logging.setConfig({ debug: false, log: [], disableLogDeduplication: true, resourceLevels: [] });
    assert.deepEqual(messages(), ['Noisy log deduplication is now disabled']);
  });

  it('the pure deduplicator follows the algorithm for other windows and thresholds', () => {
    const dedup = createLogDeduplicator({ windowMs: 60_000, threshold: 2 });
    const out = (message: string, now: number) => dedup.admit(entry(message), now).map((e) => e.message);
    assert.deepEqual(out('x', 0), ['x']);
    assert.deepEqual(out('x', 1), ['x']);
    assert.deepEqual(out('x', 2), ['Message logged 2 times; suppressing for rest of window (1m0s): x']);
    assert.deepEqual(out('x', 3), []);
    assert.deepEqual(out('y', 60_003), ['Message logged 4 times in past 1m0s: x', 'y']);
    assert.equal(formatGoDuration(10_000), '10s');
    assert.equal(formatGoDuration(90_000), '1m30s');
  });
});
