/**
 * One module process (machine-runtime.md A3.2, A3.5): its own process group, stdout lines logged at
 * INFO by `<module logger>.StdOut` and stderr lines at ERROR by `.StdErr` (message `"\n\_ " + line`),
 * and a stop that sends SIGTERM to the process, SIGTERM to its group after a third of the deadline and
 * SIGKILL to the group at the deadline (default 10 s). Exit status 143 (SIGTERM) is not an error.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from '../logging/logger.ts';

export interface ModuleExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when the process could not be started (ENOENT, EACCES, …). */
  readonly spawnError?: string;
}

export interface ModuleProcessOptions {
  readonly executable: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** `rdk.modmanager.<module name>`. */
  readonly logger: Logger;
  /** SIGTERM → SIGKILL deadline; default 10 s. */
  readonly stopTimeoutMs?: number;
}

export interface ModuleProcess {
  readonly pid: number | undefined;
  /** Resolves when the process has exited (or failed to start). */
  readonly exited: Promise<ModuleExit>;
  /** How it ended, once it has; undefined while running. */
  exitStatus(): ModuleExit | undefined;
  /** SIGTERM, group SIGTERM after a third of the deadline, group SIGKILL at the deadline. */
  stop(): Promise<ModuleExit>;
  /** SIGKILL to the group at once (hard shutdown). */
  kill(): void;
}

export const defaultStopTimeoutMs = 10_000;

export function describeExit(exit: ModuleExit): string {
  if (exit.spawnError) return exit.spawnError;
  if (exit.signal) return `killed by ${exit.signal}`;
  return `exit code ${exit.code}`;
}

export function spawnModuleProcess(options: ModuleProcessOptions): ModuleProcess {
  const child: ChildProcess = spawn(options.executable, [...options.args], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let exitInfo: ModuleExit | undefined;
  const exited = new Promise<ModuleExit>((resolve) => {
    child.once('error', (error) => {
      if (child.pid !== undefined) return; // a later signal error; 'exit' follows
      exitInfo = {
        code: null,
        signal: null,
        spawnError: `cannot start ${options.executable}: ${error.message}`,
      };
      resolve(exitInfo);
    });
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  const stdout = options.logger.child('StdOut');
  const stderr = options.logger.child('StdErr');
  if (child.stdout)
    createInterface({ input: child.stdout }).on('line', (line) => stdout.info(`\n\\_ ${line}`));
  if (child.stderr)
    createInterface({ input: child.stderr }).on('line', (line) => stderr.error(`\n\\_ ${line}`));

  const signalGroup = (signal: NodeJS.Signals, evenAfterExit = false) => {
    if ((exitInfo && !evenAfterExit) || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is already gone
    }
  };
  let stopping: Promise<ModuleExit> | undefined;
  return {
    pid: child.pid,
    exited,
    exitStatus: () => exitInfo,
    stop() {
      stopping ??= (async () => {
        if (exitInfo) return exitInfo;
        const timeout = options.stopTimeoutMs ?? defaultStopTimeoutMs;
        child.kill('SIGTERM');
        const groupTerm = setTimeout(() => signalGroup('SIGTERM'), timeout / 3);
        const groupKill = setTimeout(() => signalGroup('SIGKILL'), timeout);
        const result = await exited;
        clearTimeout(groupTerm);
        clearTimeout(groupKill);
        // Whatever the module left running in its group goes with it.
        signalGroup('SIGKILL', true);
        return result;
      })();
      return stopping;
    },
    kill: () => signalGroup('SIGKILL'),
  };
}
