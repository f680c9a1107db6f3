import type { JobHandler } from '../../../infra/jobs/job-queue.ts';
import { createMailer, type Mailer } from '../../../infra/mail/mailer.ts';
import type { Database } from '../../../infra/postgres/database.ts';
import type { LogsContext } from '../../logs/part-logs.ts';
import type { Clock } from '../../shared/clock.ts';
import { recoverOverdueDeliveries } from './delivery-recovery.ts';
import { applyDeliveryRetention, type RetentionResult } from './delivery-retention.ts';
import { createTriggerDeliveryHandler } from './trigger-delivery-handler.ts';
import type { TriggerDeliverySettings } from './trigger-delivery-settings.ts';

/** Trigger delivery in one process: the `trigger-delivery` job handler, the mailer and the retention task. */
export interface TriggerDeliveryRuntime {
  /** Register on the job queue under `triggerDeliveryJob` before it starts. */
  handler: JobHandler;
  /** One retention pass now (the background task runs it every `retentionIntervalMs`). */
  applyRetention(): Promise<RetentionResult>;
  /** One recovery pass now (the background task runs it every `recoverIntervalMs`). */
  recoverOverdue(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

export function createTriggerDeliveryRuntime(options: {
  db: Database;
  clock: Clock;
  logs: LogsContext;
  smtp: { url: string; from: string } | undefined;
  settings: () => TriggerDeliverySettings;
  onError: (message: string, error?: unknown) => void;
}): TriggerDeliveryRuntime {
  const { db, clock, settings, onError } = options;
  const mailer: Mailer | undefined = options.smtp
    ? createMailer({
        smtpUrl: options.smtp.url,
        from: options.smtp.from,
        timeoutMs: settings().requestTimeoutMs,
      })
    : undefined;
  const handler = createTriggerDeliveryHandler({ db, clock, settings, mailer, logs: options.logs, onError });
  const applyRetention = () => applyDeliveryRetention(db, clock, settings().retentionDays);
  const recoverOverdue = () => recoverOverdueDeliveries(db, clock, settings().recoverAfterMs);
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work
      .catch((error) => onError('trigger delivery maintenance', error))
      .finally(() => running.delete(tracked));
    running.add(tracked);
  };
  return {
    handler,
    applyRetention,
    recoverOverdue,
    start() {
      if (timers.length > 0) return;
      track(applyRetention());
      timers.push(
        setInterval(() => track(applyRetention()), settings().retentionIntervalMs),
        setInterval(() => track(recoverOverdue()), settings().recoverIntervalMs),
      );
      for (const timer of timers) timer.unref();
    },
    async stop() {
      for (const timer of timers.splice(0)) clearInterval(timer);
      await Promise.allSettled([...running]);
      mailer?.close();
    },
  };
}
