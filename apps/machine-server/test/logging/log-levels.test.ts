import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMachineConfig } from '../../src/config/machine-config.ts';
import {
  compileLogLevelRules,
  logPatternToRegExp,
  moduleLogLevel,
  resourceLoggerName,
} from '../../src/logging/log-level-rules.ts';
import { createLogging, type LogConfig } from '../../src/logging/logging-system.ts';
import { logConfigFromMachineConfig } from '../../src/logging/machine-logging.ts';

const sensor = resourceLoggerName('rdk:component:sensor/s1');

function captureLogging(options: { debugFlag?: boolean } = {}) {
  const lines: string[] = [];
  const logging = createLogging({ ...options, writeStdout: (line) => lines.push(line) });
  const columns = () => lines.map((line) => line.split('\t'));
  return { logging, lines, columns };
}

function config(partial: Partial<LogConfig>): LogConfig {
  return { debug: false, log: [], disableLogDeduplication: false, resourceLevels: [], ...partial };
}

describe('log patterns (A4.3)', () => {
  it('turn a glob-like pattern into an anchored regex: * is any text, . a literal dot, the rest regex', () => {
    const regex = logPatternToRegExp('rdk.resource_manager.*');
    assert.ok(regex.test('rdk.resource_manager.rdk:component:sensor/s1'));
    assert.ok(!regex.test('rdk.resource_managerX'));
    assert.ok(!regex.test('xrdk.resource_manager.a'), 'anchored at the start');
    assert.ok(logPatternToRegExp('*.webrtc').test('rdk.networking.webrtc'));
    assert.ok(!logPatternToRegExp('rdk.config').test('rdkxconfig'), 'a dot is literal');
    assert.ok(!logPatternToRegExp('rdk.config').test('rdk.config.sub'), 'anchored at the end');
    assert.ok(logPatternToRegExp('rdk.(config|ftdc)').test('rdk.ftdc'), 'other characters are regex');
  });

  it('are processed top to bottom and the last match wins; unmatched loggers stay at info', () => {
    const rules = compileLogLevelRules([
      { pattern: 'rdk.*', level: 'warn' },
      { pattern: 'rdk.resource_manager.*', level: 'debug' },
      { pattern: 'rdk.resource_manager.rdk:component:motor/*', level: 'error' },
    ]);
    assert.equal(rules.levelFor('rdk.config'), 'warn');
    assert.equal(rules.levelFor(sensor), 'debug');
    assert.equal(rules.levelFor('rdk.resource_manager.rdk:component:motor/m1'), 'error');
    assert.equal(rules.levelFor('other'), 'info');
    const reversed = compileLogLevelRules([
      { pattern: 'rdk.resource_manager.*', level: 'debug' },
      { pattern: 'rdk.*', level: 'warn' },
    ]);
    assert.equal(reversed.levelFor(sensor), 'warn', 'a later, broader pattern wins');
  });

  it('skip an invalid regex or level with a warning naming the entry, and keep the others', () => {
    const rules = compileLogLevelRules([
      { pattern: 'rdk.(', level: 'debug' },
      { pattern: 'rdk.config', level: 'loud' },
      { pattern: 'rdk.config', level: 'Warning' },
    ]);
    assert.equal(rules.rules.length, 1);
    assert.equal(rules.levelFor('rdk.config'), 'warn');
    assert.deepEqual(
      rules.warnings.map((warning) => [warning.message, warning.fields.field]),
      [
        ['Log regex did not compile', 'log[0].pattern'],
        ['Log level did not parse', 'log[1].level'],
      ],
    );
  });

  it("a resource's log_configuration beats the log array; sub-loggers follow their nearest matched ancestor", () => {
    const rules = compileLogLevelRules(
      [{ pattern: 'rdk.resource_manager.*', level: 'error' }],
      [{ resourceName: 'rdk:component:sensor/s1', level: 'debug' }],
    );
    assert.equal(rules.levelFor(sensor), 'debug');
    assert.equal(rules.levelFor(`${sensor}.reader`), 'debug');
    assert.equal(rules.levelFor('rdk.resource_manager.rdk:component:sensor/s2'), 'error');
  });
});

describe('module log_level (A4.5)', () => {
  it("the module's log_level, else debug mode, else a log pattern whose last match says debug", () => {
    const log = [
      { pattern: 'my-*', level: 'debug' },
      { pattern: 'my-quiet', level: 'warn' },
    ];
    assert.equal(moduleLogLevel({ moduleName: 'my-module', debug: false, log }), 'debug');
    assert.equal(moduleLogLevel({ moduleName: 'my-quiet', debug: false, log }), undefined);
    assert.equal(moduleLogLevel({ moduleName: 'other', debug: false, log }), undefined);
    assert.equal(moduleLogLevel({ moduleName: 'my-module', logLevel: 'error', debug: false, log }), 'error');
    assert.equal(moduleLogLevel({ moduleName: 'other', logLevel: 'warn', debug: true, log }), 'warn');
    assert.equal(moduleLogLevel({ moduleName: 'other', debug: true, log }), 'debug');
  });

  it('the logging system answers with the current config and the -debug flag', () => {
    const { logging } = captureLogging();
    logging.setConfig(config({ log: [{ pattern: 'camera-*', level: 'debug' }] }));
    assert.equal(logging.moduleLogLevel('camera-module'), 'debug');
    assert.equal(logging.moduleLogLevel('other'), undefined);
    assert.equal(captureLogging({ debugFlag: true }).logging.moduleLogLevel('other'), 'debug');
  });
});

describe('log precedence in the logging system', () => {
  it('emits by level: info by default, patterns and log_configuration change it, debug mode beats both', () => {
    const { logging, columns } = captureLogging();
    const s1 = logging.loggerFor(sensor);
    const config1 = logging.loggerFor('rdk.config');
    s1.debug('hidden');
    config1.info('shown at info');
    logging.setConfig(
      config({
        log: [{ pattern: 'rdk.*', level: 'error' }],
        resourceLevels: [{ resourceName: 'rdk:component:sensor/s1', level: 'debug' }],
      }),
    );
    s1.debug('resource debug');
    config1.warn('hidden by the pattern');
    config1.error('error passes');
    logging.setConfig(config({ debug: true, log: [{ pattern: 'rdk.*', level: 'error' }] }));
    config1.debug('debug mode');
    const messages = columns().map((column) => column.at(-1));
    assert.ok(messages.includes('shown at info'));
    assert.ok(messages.includes('resource debug'));
    assert.ok(messages.includes('error passes'));
    assert.ok(messages.includes('debug mode'));
    assert.ok(messages.includes('New log level: debug'));
    assert.ok(!messages.includes('hidden'));
    assert.ok(!messages.includes('hidden by the pattern'));
    assert.equal(logging.levelOf('rdk.config'), 'debug');
  });

  it('-debug beats a config that asks for less', () => {
    const { logging, columns } = captureLogging({ debugFlag: true });
    logging.setConfig(config({ log: [{ pattern: '*', level: 'error' }] }));
    logging.loggerFor('rdk.x').debug('still debug');
    assert.ok(columns().some((column) => column.at(-1) === 'still debug'));
  });

  it('warns about invalid patterns once per change of the log array, and still applies the valid ones', () => {
    const { logging, columns } = captureLogging();
    const log = [
      { pattern: '[', level: 'debug' },
      { pattern: 'rdk.a', level: 'debug' },
    ];
    logging.setConfig(config({ log }));
    logging.setConfig(config({ log }));
    const warnings = columns().filter((column) => column[4] === 'Log regex did not compile');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.[1], 'WARN');
    assert.equal(warnings[0]?.[2], 'rdk.config');
    assert.match(warnings[0]?.[5] ?? '', /"field":"log\[0\]\.pattern"/);
    assert.equal(logging.levelOf('rdk.a'), 'debug');
  });

  it('reads debug, log, disable_log_deduplication and log_configuration from a machine config', () => {
    const machine = parseMachineConfig(
      {
        debug: true,
        disable_log_deduplication: true,
        log: [{ pattern: 'rdk.*', level: 'warn' }],
        components: [
          { name: 's1', api: 'rdk:component:sensor', model: 'fake', log_configuration: { level: 'Debug' } },
        ],
        services: [{ name: 'dm', api: 'rdk:service:data_manager', model: 'builtin' }],
      },
      { source: 'local' },
    );
    assert.deepEqual(logConfigFromMachineConfig(machine), {
      debug: true,
      disableLogDeduplication: true,
      log: [{ pattern: 'rdk.*', level: 'warn' }],
      resourceLevels: [{ resourceName: 'rdk:component:sensor/s1', level: 'debug' }],
    });
  });
});

describe('line format (A4.1)', () => {
  it('is time, LEVEL, logger, caller dir/file:line, message and fields JSON, tab separated', () => {
    const { logging, lines } = captureLogging();
    logging
      .loggerFor('rdk.resource_manager')
      .info('built', { resource: 's1', count: 2, err: new Error('boom') });
    const [time, level, name, caller, message, fields] = (lines[0] ?? '').split('\t');
    assert.match(time ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(level, 'INFO');
    assert.equal(name, 'rdk.resource_manager');
    assert.equal(caller?.split(':')[0], 'logging/log-levels.test.ts', 'the caller is this test file');
    assert.equal(message, 'built');
    assert.deepEqual(JSON.parse(fields ?? ''), { resource: 's1', count: 2, err: 'boom' });
  });
});
