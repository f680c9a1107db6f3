/**
 * `RobotService.NeedsRestart` (A9): first call after 5 s, then every `restart_check_interval` from the
 * answer (< 1 s → 5 s; after an error 5 s). `checkNow()` asks at once (the live stream's
 * `restart_requested`). `must_restart` → `onRestart()` (the machine shuts down cleanly and its
 * supervisor starts it again). Not started when VIAM_AGENT_HANDLES_NEEDS_RESTART_CHECKING is set.
 */
import { durationMs } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { robotPb } from '@mcloud/protocol/machine';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { CloudConnection } from './cloud-connection.ts';

export interface NeedsRestartPoller {
  checkNow(): void;
  stop(): void;
}

export function startNeedsRestartPoller(
  connection: CloudConnection,
  logger: Logger,
  onRestart: () => void,
): NeedsRestartPoller {
  const client = createClient(robotPb.RobotService, connection.transport);
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const schedule = (ms: number) => {
    clearTimeout(timer);
    if (!stopping.signal.aborted) timer = setTimeout(check, ms);
  };
  async function check() {
    if (running) return;
    running = true;
    let nextMs = 5000;
    try {
      const response = await client.needsRestart(
        { id: connection.partId },
        { signal: AbortSignal.any([stopping.signal, AbortSignal.timeout(15_000)]) },
      );
      if (response.restartCheckInterval) {
        const interval = durationMs(response.restartCheckInterval);
        nextMs = interval < 1000 ? 5000 : interval;
      }
      if (response.mustRestart) {
        logger.info('the cloud asked for a restart; shutting down', { reason: 'app_restart' });
        onRestart();
        return;
      }
    } catch (error) {
      if (!stopping.signal.aborted) logger.debug('NeedsRestart check failed', { error: errorMessage(error) });
    } finally {
      running = false;
    }
    schedule(nextMs);
  }
  schedule(5000);
  return {
    checkNow: () => schedule(0),
    stop() {
      stopping.abort();
      clearTimeout(timer);
    },
  };
}
