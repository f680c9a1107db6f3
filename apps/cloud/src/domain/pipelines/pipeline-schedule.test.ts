import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { DomainError } from '../errors.ts';
import { parseSchedule, planWindows, tickAtOrBefore, windowEndingAt } from './pipeline-schedule.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

test('parseSchedule accepts 5-field UTC cron and refuses the rest naming the field', () => {
  assert.equal(parseSchedule(' 0  * * * * ').expression, '0 * * * *');
  for (const [bad, pattern] of [
    ['', /required/],
    ['* * * *', /exactly 5 fields.*got 4/],
    ['0 * * * * *', /exactly 5 fields.*got 6/],
    ['61 * * * *', /not a valid cron/],
    ['0 0 30 2 *', /never fires/],
    ['x'.repeat(201), /at most 200/],
  ] as const) {
    assert.throws(
      () => parseSchedule(bad),
      (error: DomainError) =>
        error.code === 'InvalidArgument' && /schedule/.test(error.message) && pattern.test(error.message),
      bad,
    );
  }
});

test('a tick closes the window since the previous tick, in UTC', () => {
  const hourly = parseSchedule('0 * * * *');
  assert.deepEqual(windowEndingAt(hourly, at('2025-03-10T11:00:00Z')), {
    startMs: at('2025-03-10T10:00:00Z'),
    endMs: at('2025-03-10T11:00:00Z'),
  });
  const daily = parseSchedule('30 2 * * *');
  const window = windowEndingAt(daily, at('2025-03-10T02:30:00Z'));
  assert.equal(iso(window?.startMs as number), '2025-03-09T02:30:00.000Z');
  assert.equal(tickAtOrBefore(hourly, at('2025-03-10T11:00:00Z')), at('2025-03-10T11:00:00Z'));
  assert.equal(tickAtOrBefore(hourly, at('2025-03-10T11:59:59.999Z')), at('2025-03-10T11:00:00Z'));
});

test('planWindows: nothing before the next tick, then exactly the closed window', () => {
  const hourly = parseSchedule('0 * * * *');
  const created = at('2025-03-10T10:30:00Z');
  const plannedUntilMs = tickAtOrBefore(hourly, created) as number;
  const base = { schedule: hourly, plannedUntilMs, createdAtMs: created, maxWindows: 100 };
  assert.deepEqual(planWindows({ ...base, nowMs: at('2025-03-10T10:59:59.999Z') }).windows, []);
  const plan = planWindows({ ...base, nowMs: at('2025-03-10T11:00:00Z') });
  assert.deepEqual(plan.windows, [
    { startMs: at('2025-03-10T10:00:00Z'), endMs: at('2025-03-10T11:00:00Z'), reason: 'schedule' },
  ]);
  assert.equal(plan.plannedUntilMs, at('2025-03-10T11:00:00Z'));
  // The same clock again plans nothing: the window is planned once.
  assert.deepEqual(
    planWindows({ ...base, plannedUntilMs: plan.plannedUntilMs, nowMs: at('2025-03-10T11:20:00Z') }).windows,
    [],
  );
});

test('planWindows: windows missed while disabled are filled, the latest one is the scheduled run', () => {
  const hourly = parseSchedule('0 * * * *');
  const plan = planWindows({
    schedule: hourly,
    plannedUntilMs: at('2025-03-10T11:00:00Z'),
    createdAtMs: at('2025-03-10T10:30:00Z'),
    nowMs: at('2025-03-10T14:10:00Z'),
    maxWindows: 100,
  });
  assert.deepEqual(
    plan.windows.map((w) => [iso(w.startMs).slice(11, 16), iso(w.endMs).slice(11, 16), w.reason]),
    [
      ['11:00', '12:00', 'missed'],
      ['12:00', '13:00', 'missed'],
      ['13:00', '14:00', 'schedule'],
    ],
  );
});

test('planWindows: backfill windows before creation, capped per pass and resumed', () => {
  const daily = parseSchedule('0 0 * * *');
  const created = at('2025-03-10T06:00:00Z');
  let plannedUntilMs = at('2025-03-01T00:00:00Z');
  const seen: string[] = [];
  for (let pass = 0; pass < 5; pass++) {
    const plan = planWindows({
      schedule: daily,
      plannedUntilMs,
      createdAtMs: created,
      nowMs: created,
      maxWindows: 4,
    });
    assert.ok(plan.windows.length <= 4);
    for (const w of plan.windows) seen.push(`${iso(w.startMs).slice(5, 10)} ${w.reason}`);
    plannedUntilMs = plan.plannedUntilMs;
  }
  assert.deepEqual(seen, [
    '03-01 backfill',
    '03-02 backfill',
    '03-03 backfill',
    '03-04 backfill',
    '03-05 backfill',
    '03-06 backfill',
    '03-07 backfill',
    '03-08 backfill',
    '03-09 schedule',
  ]);
});

test('property: planned windows tile time without gaps or overlaps, whatever the pass boundaries', () => {
  const schedules = ['*/7 * * * *', '0 * * * *', '15 3 * * 1', '0 0 1 * *', '5,35 */2 * * *'].map(
    parseSchedule,
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: schedules.length - 1 }),
      fc.integer({ min: at('2024-01-01T00:00:00Z'), max: at('2026-01-01T00:00:00Z') }),
      fc.array(fc.integer({ min: 0, max: 3 * 24 * 3600 * 1000 }), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 1, max: 50 }),
      (which, startMs, steps, maxWindows) => {
        const schedule = schedules[which] as ReturnType<typeof parseSchedule>;
        let plannedUntilMs = tickAtOrBefore(schedule, startMs) ?? startMs;
        let nowMs = startMs;
        const all: { startMs: number; endMs: number }[] = [];
        for (const step of steps) {
          nowMs += step;
          const plan = planWindows({ schedule, plannedUntilMs, createdAtMs: startMs, nowMs, maxWindows });
          all.push(...plan.windows);
          plannedUntilMs = plan.plannedUntilMs;
        }
        for (let i = 0; i < all.length; i++) {
          const w = all[i] as { startMs: number; endMs: number };
          assert.ok(w.startMs < w.endMs);
          assert.ok(w.endMs <= nowMs);
          if (i > 0) assert.equal(w.startMs, (all[i - 1] as { endMs: number }).endMs);
          assert.deepEqual(windowEndingAt(schedule, w.endMs), { startMs: w.startMs, endMs: w.endMs });
        }
      },
    ),
    { numRuns: 200 },
  );
});
