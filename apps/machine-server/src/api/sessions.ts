import { randomUUID } from 'node:crypto';
import type { Interceptor } from '@connectrpc/connect';
import type { Clock } from '../clock.ts';
import { MachineError } from '../errors.ts';
import { type Api, createApi, formatApi } from '../resources/resource-name.ts';

/** The metadata header that carries a session id on calls. */
export const sessionHeader = 'viam-sid';

/**
 * Methods that keep an actuator moving: when the session that called one expires, the resource is
 * stopped (the `safety_heartbeat_monitored` option of the Viam protos; the SDK's own fallback list).
 */
const heartbeatMonitored = new Set([
  '/viam.component.motor.v1.MotorService/SetPower',
  '/viam.component.motor.v1.MotorService/GoFor',
  '/viam.component.motor.v1.MotorService/GoTo',
  '/viam.component.motor.v1.MotorService/SetRPM',
]);

export interface SessionInfo {
  readonly id: string;
  readonly remoteAddress?: string;
}

export interface MonitoredResource {
  readonly api: Api;
  readonly name: string;
}

export interface SessionsOptions {
  /** `network.sessions.heartbeat_window`, read when a session starts or beats. */
  heartbeatWindowMs(): number;
  clock: Clock;
  /** Called once per expired session with the actuators it moved (to stop them). */
  onExpired(resources: readonly MonitoredResource[], sessionId: string): void;
}

export interface Sessions {
  readonly interceptor: Interceptor;
  /** StartSession: a new session, or `resume` (a live session id of this machine). */
  start(resume: string, remoteAddress: string | undefined): { id: string; heartbeatWindowMs: number };
  /** SendSessionHeartbeat; InvalidArgument `SESSION_EXPIRED` for an unknown or expired id. */
  heartbeat(id: string): void;
  list(): SessionInfo[];
  /** Drops every session without stopping anything (web server shutdown). */
  close(): void;
}

interface Session {
  readonly id: string;
  readonly remoteAddress?: string;
  deadlineMs: number;
  timer: NodeJS.Timeout;
  readonly monitored: Map<string, MonitoredResource>;
}

/**
 * RobotService sessions (machine-runtime.md A7.5): a client that starts a session must beat within the
 * heartbeat window; when it does not, the actuators it set in motion through heartbeat-monitored methods
 * are stopped. Calls carrying `viam-sid` of an expired session answer SESSION_EXPIRED.
 */
export function createSessions(options: SessionsOptions): Sessions {
  const sessions = new Map<string, Session>();

  const expired = () => new MachineError('InvalidArgument', 'SESSION_EXPIRED');

  function arm(session: Session): void {
    clearTimeout(session.timer);
    const windowMs = options.heartbeatWindowMs();
    session.deadlineMs = options.clock.now().getTime() + windowMs;
    session.timer = setTimeout(() => expire(session), windowMs);
    session.timer.unref();
  }

  function expire(session: Session): void {
    // A heartbeat may have moved the deadline after the timer was set (clock injected in tests).
    const left = session.deadlineMs - options.clock.now().getTime();
    if (left > 0) {
      session.timer = setTimeout(() => expire(session), left);
      session.timer.unref();
      return;
    }
    sessions.delete(session.id);
    if (session.monitored.size > 0) options.onExpired([...session.monitored.values()], session.id);
  }

  function live(id: string): Session {
    const session = sessions.get(id);
    if (!session) throw expired();
    return session;
  }

  return {
    interceptor: (next) => async (req) => {
      const id = req.header.get(sessionHeader);
      if (!id) return next(req);
      const session = live(id);
      const method = `/${req.service.typeName}/${req.method.name}`;
      if (heartbeatMonitored.has(method) && !req.stream) {
        const name = (req.message as { name?: unknown }).name;
        const api = apiOfService(req.service.typeName);
        if (typeof name === 'string' && api)
          session.monitored.set(`${formatApi(api)}/${name}`, { api, name });
      }
      return next(req);
    },
    start(resume, remoteAddress) {
      if (resume !== '') {
        const session = live(resume);
        arm(session);
        return { id: session.id, heartbeatWindowMs: options.heartbeatWindowMs() };
      }
      const session: Session = {
        id: randomUUID(),
        deadlineMs: 0,
        timer: setTimeout(() => {}, 0),
        monitored: new Map(),
        ...(remoteAddress ? { remoteAddress } : {}),
      };
      sessions.set(session.id, session);
      arm(session);
      return { id: session.id, heartbeatWindowMs: options.heartbeatWindowMs() };
    },
    heartbeat(id) {
      arm(live(id));
    },
    list: () =>
      [...sessions.values()].map((session) => ({
        id: session.id,
        ...(session.remoteAddress ? { remoteAddress: session.remoteAddress } : {}),
      })),
    close() {
      for (const session of sessions.values()) clearTimeout(session.timer);
      sessions.clear();
    },
  };
}

/** `viam.component.motor.v1.MotorService` → `rdk:component:motor`. */
function apiOfService(typeName: string): Api | undefined {
  const match = /^viam\.(component|service)\.(\w+)\.v1\.\w+Service$/.exec(typeName);
  return match ? createApi('rdk', match[1] as string, match[2] as string) : undefined;
}
