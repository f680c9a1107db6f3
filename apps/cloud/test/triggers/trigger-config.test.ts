import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validatePartConfig } from '../../src/domain/fleet/part-config.ts';
import { parseTriggers } from '../../src/domain/triggers/trigger-config.ts';

const webhook = { type: 'webhook', value: 'https://example.com/hook', seconds_between_notifications: 0 };

test('every event type parses', () => {
  const triggers = parseTriggers('config.triggers', [
    { name: 'on', event: { type: 'part_online' }, notifications: [webhook] },
    {
      name: 'off',
      event: { type: 'part_offline' },
      notifications: [{ type: 'email', value: 'all_machine_owners' }],
    },
    {
      name: 'data',
      event: {
        type: 'part_data_ingested',
        data_ingested: { data_types: ['binary', 'tabular', 'file', 'unspecified'] },
      },
      notifications: [{ type: 'email', value: 'ops@example.com', seconds_between_notifications: 60 }],
    },
    {
      name: 'cond',
      event: {
        type: 'conditional_data_ingested',
        conditional: {
          data_capture_method: 'sensor:my-sensor:Readings',
          conditions: {
            evals: [
              { operator: 'gt', value: { coordinate: { latitude: 40 } } },
              { operator: 'regex', value: { s: '^a' } },
            ],
          },
        },
      },
      notifications: [webhook],
      notes: 'n',
    },
    {
      name: 'logs',
      event: { type: 'conditional_logs_ingested', log_levels: ['error', 'warn'] },
      notifications: [webhook],
    },
  ]);
  assert.equal(triggers.length, 5);
  assert.deepEqual(triggers[3]?.conditional?.method, {
    componentType: 'sensor',
    componentName: 'my-sensor',
    method: 'Readings',
  });
  assert.equal(triggers[2]?.notifications[0]?.secondsBetweenNotifications, 60);
  assert.deepEqual(triggers[4]?.logLevels, ['error', 'warn']);
});

test('invalid triggers reject the save with the path of the offending field', () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ event: { type: 'part_online' }, notifications: [webhook] }, /config\.triggers\[0\]\.name/],
    [
      { name: 'a', event: { type: 'part_exploded' }, notifications: [webhook] },
      /config\.triggers\[0\]\.event\.type: must be one of/,
    ],
    [
      {
        name: 'a',
        event: { type: 'part_data_ingested', data_ingested: { data_types: ['video'] } },
        notifications: [webhook],
      },
      /event\.data_ingested\.data_types\[0\]/,
    ],
    [
      {
        name: 'a',
        event: { type: 'conditional_logs_ingested', log_levels: ['debug'] },
        notifications: [webhook],
      },
      /event\.log_levels\[0\]/,
    ],
    [
      {
        name: 'a',
        event: { type: 'conditional_data_ingested', conditional: { data_capture_method: 'sensor:Readings' } },
        notifications: [webhook],
      },
      /event\.conditional\.data_capture_method: must have the form/,
    ],
    [
      {
        name: 'a',
        event: {
          type: 'conditional_data_ingested',
          conditional: {
            data_capture_method: 's:n:m',
            conditions: { evals: [{ operator: 'like', value: 1 }] },
          },
        },
        notifications: [webhook],
      },
      /evals\[0\]\.operator/,
    ],
    [
      {
        name: 'a',
        event: {
          type: 'conditional_data_ingested',
          conditional: {
            data_capture_method: 's:n:m',
            conditions: { evals: [{ operator: 'gt', value: { cpu: 'high' } }] },
          },
        },
        notifications: [webhook],
      },
      /evals\[0\]\.value\.cpu: must be a number for gt/,
    ],
    [
      {
        name: 'a',
        event: {
          type: 'conditional_data_ingested',
          conditional: {
            data_capture_method: 's:n:m',
            conditions: { evals: [{ operator: 'regex', value: '(' }] },
          },
        },
        notifications: [webhook],
      },
      /evals\[0\]\.value: must be a valid regular expression/,
    ],
    [
      { name: 'a', event: { type: 'part_online' }, notifications: [{ type: 'sms', value: 'x' }] },
      /notifications\[0\]\.type/,
    ],
    [
      { name: 'a', event: { type: 'part_online' }, notifications: [{ type: 'webhook', value: 'not a url' }] },
      /notifications\[0\]\.value: must be an absolute/,
    ],
    [
      { name: 'a', event: { type: 'part_online' }, notifications: [{ type: 'email', value: 'nobody' }] },
      /notifications\[0\]\.value: must be an email address/,
    ],
    [
      {
        name: 'a',
        event: { type: 'part_online' },
        notifications: [{ ...webhook, seconds_between_notifications: -1 }],
      },
      /notifications\[0\]\.seconds_between_notifications: must be a number from 0 to 2592000 \(30 days\) \(got -1\)/,
    ],
    [
      {
        name: 'a',
        event: { type: 'part_online' },
        notifications: [{ ...webhook, seconds_between_notifications: 2_592_001 }],
      },
      /notifications\[0\]\.seconds_between_notifications: must be a number from 0 to 2592000 \(30 days\) \(got 2592001\)/,
    ],
    [
      { name: 'a', event: { type: 'part_online' }, notifications: [] },
      /config\.triggers\[0\]\.notifications: must be a non-empty list/,
    ],
  ];
  for (const [trigger, pattern] of cases) {
    assert.throws(
      () => validatePartConfig('config', { triggers: [trigger] }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'InvalidArgument');
        assert.match(error.message, pattern);
        return true;
      },
    );
  }
});

test('URL credentials never appear in the error', () => {
  assert.throws(
    () =>
      parseTriggers('t', [
        {
          name: 'a',
          event: { type: 'part_online' },
          notifications: [{ type: 'webhook', value: 'ftp://user:s3cret@host/x' }],
        },
      ]),
    (error: Error) => !error.message.includes('s3cret'),
  );
});
