import { randomUUID } from 'node:crypto';
import type { Interceptor } from '@connectrpc/connect';
import type { Clock } from '../clock.ts';
import { MachineError } from '../errors.ts';
import { sessionHeader } from './sessions.ts';

export interface Operation {
  readonly id: string;
  /** `/package.Service/Method`. */
  readonly method: string;
  readonly started: Date;
  readonly sessionId?: string;
}

/**
 * In-flight calls (RobotService GetOperations / CancelOperation / BlockForOperation). Each call gets an
 * id; cancelling it aborts the signal the handler (and the resource) sees.
 */
export interface Operations {
  readonly interceptor: Interceptor;
  list(): Operation[];
  /** Aborts the operation; NotFound when it is not running. */
  cancel(id: string): void;
  /** Resolves when the operation has finished (at once when it is not running). */
  blockFor(id: string, signal: AbortSignal): Promise<void>;
}

interface Running extends Operation {
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

// Polled by every SDK client as its connection heartbeat; listing them would only be noise.
const untracked = new Set([
  '/viam.robot.v1.RobotService/GetOperations',
  '/viam.robot.v1.RobotService/SendSessionHeartbeat',
  '/proto.rpc.v1.AuthService/Authenticate',
]);

export function createOperations(clock: Clock): Operations {
  const running = new Map<string, Running>();
  return {
    interceptor: (next) => async (req) => {
      const method = `/${req.service.typeName}/${req.method.name}`;
      if (untracked.has(method)) return next(req);
      const controller = new AbortController();
      let finish = () => {};
      const done = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const id = randomUUID();
      const sessionId = req.header.get(sessionHeader) ?? undefined;
      running.set(id, {
        id,
        method,
        started: clock.now(),
        controller,
        done,
        ...(sessionId ? { sessionId } : {}),
      });
      try {
        const res = await next({ ...req, signal: AbortSignal.any([req.signal, controller.signal]) });
        if (!res.stream) return res;
        const messages = res.message;
        return {
          ...res,
          message: (async function* () {
            try {
              yield* messages;
            } finally {
              running.delete(id);
              finish();
            }
          })(),
        };
      } finally {
        if (!req.stream) {
          running.delete(id);
          finish();
        }
      }
    },
    list: () =>
      [...running.values()].map(({ id, method, started, sessionId }) => ({
        id,
        method,
        started,
        ...(sessionId ? { sessionId } : {}),
      })),
    cancel(id) {
      const operation = running.get(id);
      if (!operation) throw new MachineError('NotFound', `operation ${JSON.stringify(id)} is not running`);
      operation.controller.abort(new MachineError('Aborted', `operation ${id} was cancelled`));
    },
    async blockFor(id, signal) {
      const operation = running.get(id);
      if (!operation) return;
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(new MachineError('Aborted', 'BlockForOperation was cancelled'));
        signal.addEventListener('abort', onAbort, { once: true });
        operation.done.then(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    },
  };
}
