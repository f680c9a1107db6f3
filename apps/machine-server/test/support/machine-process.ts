/**
 * A real `machine-server` child process for end-to-end tests and benchmarks: started with its own
 * VIAM_HOME, stdout/stderr collected line by line, `waitForLine` to follow its logs, `stop` sends
 * SIGTERM and waits for the exit code (SIGKILL after a deadline).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

const binPath = path.join(import.meta.dirname, '..', '..', 'src', 'bin', 'machine-server.js');

export interface MachineProcess {
  readonly child: ChildProcess;
  readonly dir: string;
  readonly viamHome: string;
  readonly configPath: string;
  readonly lines: string[];
  /** Resolves with the first line (already seen or future) matching `pattern` after index `from`. */
  waitForLine(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  stop(timeoutMs?: number): Promise<number | null>;
  /** Removes the temp directory (after stop). */
  cleanup(): Promise<void>;
}

export interface StartMachineOptions {
  readonly config: object;
  readonly args?: readonly string[];
  readonly env?: Record<string, string>;
  /** Reuse a directory (and so VIAM_HOME, cache) from an earlier process. */
  readonly dir?: string;
}

export async function startMachineProcess(options: StartMachineOptions): Promise<MachineProcess> {
  const dir = options.dir ?? (await mkdtemp(path.join(tmpdir(), 'machine-server-test-')));
  const viamHome = path.join(dir, 'viam-home');
  const configPath = path.join(dir, 'machine.json');
  // Port 0 unless the test chose an address: many machine-servers (and engineers) share this host.
  const config =
    'network' in options.config
      ? options.config
      : { ...options.config, network: { bind_address: '127.0.0.1:0' } };
  await writeFile(configPath, JSON.stringify(config, null, 2));
  const child = spawn(
    process.execPath,
    [binPath, '-config', configPath, '-ftdc=false', ...(options.args ?? [])],
    {
      env: { ...process.env, VIAM_HOME: viamHome, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const collect = (stream: NodeJS.ReadableStream) => {
    let buffer = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        lines.push(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf('\n');
      }
      for (const waiter of waiters) waiter();
    });
  };
  if (child.stdout) collect(child.stdout);
  if (child.stderr) collect(child.stderr);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
    for (const waiter of waiters) waiter();
  });
  return {
    child,
    dir,
    viamHome,
    configPath,
    lines,
    waitForLine(pattern, timeoutMs = 30_000, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.slice(from).find((line) => pattern.test(line));
          if (found !== undefined) {
            done();
            resolve(found);
          } else if (exitCode !== undefined) {
            done();
            reject(
              new Error(
                `machine-server exited (${exitCode}) before logging ${pattern}\n${lines.slice(-40).join('\n')}`,
              ),
            );
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`no line matching ${pattern} within ${timeoutMs} ms\n${lines.slice(-40).join('\n')}`),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop(timeoutMs = 70_000) {
      if (exitCode !== undefined) return exitCode;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
    async cleanup() {
      if (!options.dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
