import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseCaptureMethods } from '../../src/data/capture-method-config.ts';
import { parseDataManagerConfig, unknownDataManagerKeys } from '../../src/data/data-manager-config.ts';
import { isMachineError } from '../../src/errors.ts';
import type { JsonObject } from '../../src/json.ts';

const context = { viamHome: '/home/robot/.viam', cpuCount: 8 };
const at = 'services[1].attributes';

function rejects(run: () => unknown, pattern: RegExp) {
  assert.throws(run, (error: unknown) => {
    assert.ok(isMachineError(error), String(error));
    assert.equal(error.code, 'InvalidArgument');
    assert.match(error.message, pattern);
    return true;
  });
}

test('defaults are the reference defaults', () => {
  const config = parseDataManagerConfig({}, at, context);
  assert.deepEqual(config, {
    captureDir: '/home/robot/.viam/capture',
    tags: [],
    captureDisabled: false,
    syncDisabled: false,
    syncIntervalMs: 6000,
    additionalSyncPaths: [],
    fileLastModifiedMs: 10_000,
    maximumNumSyncThreads: 4,
    maximumCaptureFileSizeBytes: 262_144,
    deleteEveryNthWhenDiskFull: 5,
    diskUsageDeletionThreshold: 0.9,
    captureDirDeletionThreshold: 0.5,
    selectiveSyncerName: '',
    mongoCaptureConfigured: false,
  });
  assert.equal(
    parseDataManagerConfig({ sync_interval_mins: 0.00001 }, at, context).syncIntervalMs,
    6000,
    '≈0 → default',
  );
});

test('every attribute is read, ~ is expanded and paths are absolute', () => {
  const config = parseDataManagerConfig(
    {
      capture_dir: '~/data/capture',
      tags: ['a', 'b'],
      capture_disabled: true,
      sync_disabled: true,
      sync_interval_mins: 0.5,
      additional_sync_paths: ['~/more', '/abs/dir'],
      file_last_modified_millis: 500,
      maximum_num_sync_threads: 3,
      maximum_capture_file_size_bytes: 1000,
      delete_every_nth_when_disk_full: 2,
      disk_usage_deletion_threshold: 0.8,
      capture_dir_deletion_threshold: 0.25,
      selective_syncer_name: 'gate',
      capture_control_sensor: { name: 'ctl', key: 'overrides' },
    },
    at,
    context,
  );
  assert.equal(config.captureDir, path.join(homedir(), 'data/capture'));
  assert.deepEqual(config.additionalSyncPaths, [path.join(homedir(), 'more'), '/abs/dir']);
  assert.equal(config.syncIntervalMs, 30_000);
  assert.equal(config.maximumNumSyncThreads, 3);
  assert.equal(config.deleteEveryNthWhenDiskFull, 2);
  assert.equal(config.diskUsageDeletionThreshold, 0.8);
  assert.equal(config.captureDirDeletionThreshold, 0.25);
  assert.equal(config.selectiveSyncerName, 'gate');
  assert.deepEqual(config.captureControlSensor, { name: 'ctl', key: 'overrides' });
  assert.equal(config.captureDisabled && config.syncDisabled, true);
});

test('bad values are rejected naming the field, the value and the rule', () => {
  rejects(
    () => parseDataManagerConfig({ sync_interval_mins: -1 }, at, context),
    /^services\[1\]\.attributes\.sync_interval_mins: must not be negative \(got -1\)/,
  );
  rejects(
    () => parseDataManagerConfig({ maximum_num_sync_threads: 1.5 }, at, context),
    /maximum_num_sync_threads: must be a whole number/,
  );
  rejects(
    () => parseDataManagerConfig({ disk_usage_deletion_threshold: 2 }, at, context),
    /disk_usage_deletion_threshold: must be a fraction between 0 and 1 \(got 2\)/,
  );
  rejects(
    () => parseDataManagerConfig({ tags: ['ok', 3] }, at, context),
    /tags\[1\]: must be a non-empty string \(got 3\)/,
  );
  rejects(
    () => parseDataManagerConfig({ capture_disabled: 'yes' }, at, context),
    /capture_disabled: must be true or false/,
  );
  rejects(
    () => parseDataManagerConfig({ additional_sync_paths: [''] }, at, context),
    /additional_sync_paths\[0\]: must be a non-empty/,
  );
  rejects(
    () => parseDataManagerConfig({ capture_control_sensor: { name: 'x' } }, at, context),
    /capture_control_sensor\.key: is required/,
  );
  rejects(
    () => parseDataManagerConfig({ mongo_capture_config: {} }, at, context),
    /mongo_capture_config\.uri: is required/,
  );
});

test('capture_dir may not move in an untrusted environment', () => {
  rejects(
    () => parseDataManagerConfig({ capture_dir: '/tmp/elsewhere' }, at, { ...context, untrustedEnv: true }),
    /capture_dir: may not be changed in an untrusted environment/,
  );
  assert.equal(
    parseDataManagerConfig({ capture_dir: '/home/robot/.viam/capture' }, at, {
      ...context,
      untrustedEnv: true,
    }).captureDir,
    '/home/robot/.viam/capture',
  );
});

test('unknown attributes are reported for a warning', () => {
  assert.deepEqual(unknownDataManagerKeys({ tags: [], sync_intervl_mins: 1 }), ['sync_intervl_mins']);
});

test('capture methods on a component: defaults, recent_data_store, other service_configs ignored, errors with paths', () => {
  const methods = parseCaptureMethods(
    [
      { type: 'other', attributes: { capture_methods: 'ignored' } },
      {
        type: 'data_manager',
        attributes: {
          capture_methods: [
            {
              method: 'Readings',
              capture_frequency_hz: 2,
              tags: ['t'],
              recent_data_store: { stored_hours: 24 },
            },
            {
              method: 'DoCommand',
              capture_frequency_hz: 0,
              additional_params: { docommand_input: { x: 1 } },
              disabled: true,
            },
          ],
        },
      },
    ],
    'components[4]',
  );
  assert.equal(methods.length, 2);
  assert.deepEqual(methods[0], {
    method: 'Readings',
    captureFrequencyHz: 2,
    additionalParams: {},
    disabled: false,
    captureQueueSize: 250,
    captureBufferSize: 4096,
    tags: ['t'],
    recentDataStoredHours: 24,
    path: 'components[4].service_configs[1].attributes.capture_methods[0]',
  });
  assert.equal(methods[1]?.disabled, true);
  const one = (method: JsonObject) => [{ type: 'data_manager', attributes: { capture_methods: [method] } }];
  rejects(
    () => parseCaptureMethods(one({ capture_frequency_hz: 1 }), 'components[0]'),
    /capture_methods\[0\]\.method: is required/,
  );
  rejects(
    () => parseCaptureMethods(one({ method: 'Readings', capture_frequency_hz: -2 }), 'components[0]'),
    /^components\[0\]\.service_configs\[0\]\.attributes\.capture_methods\[0\]\.capture_frequency_hz: must not be negative \(got -2\)/,
  );
  rejects(
    () => parseCaptureMethods(one({ method: 'Readings', capture_queue_size: -1 }), 'c'),
    /capture_queue_size: must be a non-negative whole number/,
  );
  rejects(
    () => parseCaptureMethods(one({ method: 'Readings', recent_data_store: { stored_hours: 'x' } }), 'c'),
    /recent_data_store\.stored_hours/,
  );
  rejects(
    () =>
      parseCaptureMethods(
        [
          {
            type: 'data_manager',
            attributes: { capture_methods: [{ method: 'Readings' }, { method: 'Readings' }] },
          },
        ],
        'c',
      ),
    /capture_methods\[1\]\.method: duplicates/,
  );
});
