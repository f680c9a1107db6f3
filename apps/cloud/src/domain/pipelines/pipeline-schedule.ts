import { Cron } from 'croner';
import { invalidArgument } from '../errors.ts';

/**
 * The window arithmetic of data pipelines, pure (time is passed in). A schedule is a 5-field cron
 * expression in UTC; each tick `t` closes the window `[previous tick, t)`, so an hourly schedule processes
 * one hour of data per run.
 *
 * The scheduler keeps, per pipeline, `plannedUntilMs`: the latest tick whose window already has a run.
 * `planWindows` returns the windows whose closing tick lies in `(plannedUntilMs, nowMs]`, oldest first and
 * at most `maxWindows` of them (the rest come on the next pass), and names why each one runs: the latest
 * is the regular `schedule` run; earlier ones were missed (the pipeline was disabled or no replica was up)
 * or, before the pipeline existed, are `backfill`.
 */

export interface PipelineSchedule {
  expression: string;
  /** The first tick strictly after `ms`, or null when the expression never fires again. */
  nextTickAfter(ms: number): number | null;
  /** The latest tick strictly before `ms`, or null. */
  tickBefore(ms: number): number | null;
}

export interface PipelineWindow {
  startMs: number;
  endMs: number;
}

export type WindowReason = 'schedule' | 'missed' | 'backfill';

export interface PlannedWindow extends PipelineWindow {
  reason: WindowReason;
}

export const scheduleRules = { maxLength: 200 } as const;

/**
 * Readings are indexed and partitioned by capture time (`captured_at`: the machine's request time, else
 * its receive time); windows are on `time_received`. Both are set by the machine and differ by the capture
 * latency, assumed below this margin: a reading whose `time_received` is more than an hour after its
 * `time_requested` is not seen by the runs of its window.
 */
export const captureLatencyMarginMs = 3_600_000;

export function parseSchedule(expression: string): PipelineSchedule {
  const text = expression.trim();
  if (text === '') throw invalidArgument('schedule', 'is required (a 5-field cron expression in UTC)');
  if (text.length > scheduleRules.maxLength) {
    throw invalidArgument('schedule', `must be at most ${scheduleRules.maxLength} characters`, text.length);
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5) {
    throw invalidArgument(
      'schedule',
      `must have exactly 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`,
      text,
    );
  }
  let cron: Cron;
  try {
    cron = new Cron(text, { timezone: 'UTC', mode: '5-part', paused: true, domAndDow: false });
  } catch (error) {
    throw invalidArgument('schedule', `is not a valid cron expression: ${(error as Error).message}`, text);
  }
  if (cron.nextRun(new Date(0)) === null) {
    throw invalidArgument('schedule', 'never fires', text);
  }
  return {
    expression: fields.join(' '),
    nextTickAfter(ms) {
      // croner strips milliseconds of the reference and answers the next tick strictly after it.
      const next = cron.nextRun(new Date(ms));
      return next ? next.getTime() : null;
    },
    tickBefore(ms) {
      // croner answers runs strictly before the reference (millisecond precision).
      const [previous] = cron.previousRuns(1, new Date(ms));
      return previous && previous.getTime() < ms ? previous.getTime() : null;
    },
  };
}

/** The window closed by the tick `endMs` (a tick of the schedule). */
export function windowEndingAt(schedule: PipelineSchedule, endMs: number): PipelineWindow | null {
  const startMs = schedule.tickBefore(endMs);
  return startMs === null ? null : { startMs, endMs };
}

/** The tick a new pipeline starts from: the latest one at or before `ms` (its window is not run). */
export function tickAtOrBefore(schedule: PipelineSchedule, ms: number): number | null {
  return schedule.tickBefore(ms + 1);
}

export interface PlanInput {
  schedule: PipelineSchedule;
  /** Latest tick whose window has a run. */
  plannedUntilMs: number;
  /** When the pipeline was created: windows closing at or before it are backfill. */
  createdAtMs: number;
  nowMs: number;
  maxWindows: number;
}

export interface Plan {
  windows: PlannedWindow[];
  /** The new `plannedUntilMs` (unchanged when nothing is due). */
  plannedUntilMs: number;
}

export function planWindows(input: PlanInput): Plan {
  const { schedule, nowMs } = input;
  const ticks: number[] = [];
  let cursor = input.plannedUntilMs;
  while (ticks.length < input.maxWindows) {
    const next = schedule.nextTickAfter(cursor);
    if (next === null || next > nowMs) break;
    ticks.push(next);
    cursor = next;
  }
  if (ticks.length === 0) return { windows: [], plannedUntilMs: input.plannedUntilMs };
  const latestDue = latestTickAtOrBefore(schedule, nowMs, cursor);
  const windows: PlannedWindow[] = [];
  let startMs = schedule.tickBefore(ticks[0] as number) ?? input.plannedUntilMs;
  for (const endMs of ticks) {
    const reason: WindowReason =
      endMs === latestDue ? 'schedule' : endMs <= input.createdAtMs ? 'backfill' : 'missed';
    windows.push({ startMs, endMs, reason });
    startMs = endMs;
  }
  return { windows, plannedUntilMs: cursor };
}

function latestTickAtOrBefore(schedule: PipelineSchedule, nowMs: number, known: number): number {
  return tickAtOrBefore(schedule, nowMs) ?? known;
}
