import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BootstrapFile } from '../../apps/cloud/src/bootstrap.ts';

export interface CloudProcess {
  url: string;
  databaseUrl: string;
  bootstrap: BootstrapFile;
  /** PID of the Node process that serves the API (PostgreSQL runs in its own processes). */
  pid: number;
  dataDir: string;
  /** Runs a full GC in the server (needs `exposeGc`) and returns its memory usage afterwards. */
  collectGarbage(): Promise<NodeJS.MemoryUsage>;
  /** Directory the server's `--cpu-prof` profile lands in, when profiling. */
  profileDir: string | undefined;
  stop(): Promise<void>;
}

/**
 * Starts the cloud in a child Node process with a fresh embedded PostgreSQL in a temp data directory,
 * so the server gets its own event loop (and its own RSS) apart from the benchmark's load generator.
 */
export async function startCloudProcess(
  options: {
    profile?: boolean;
    experiments?: readonly string[];
    exposeGc?: boolean;
    /** Serve this database (a replica of a cloud already running) instead of a fresh embedded one. */
    databaseUrl?: string;
  } = {},
): Promise<CloudProcess> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mcloud-bench-'));
  const profileDir = options.profile ? path.join(dataDir, 'profile') : undefined;
  const execArgv = [
    ...(await cloudNodeFlags()),
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=500'] : []),
  ];
  const child: ChildProcess = fork(path.join(import.meta.dirname, 'cloud-server.ts'), [dataDir], {
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: {
      ...process.env,
      BENCH_SERVER_EXPERIMENTS: (options.experiments ?? []).join(','),
      ...(options.databaseUrl ? { BENCH_DATABASE_URL: options.databaseUrl } : {}),
    },
  });
  // `bootstrap` is absent when the database was not empty (databaseUrl given).
  const ready = await new Promise<{ url: string; bootstrap: BootstrapFile; databaseUrl: string }>(
    (resolve, reject) => {
      child.once('message', (message) => resolve(message as never));
      child.once('exit', (code) => reject(new Error(`cloud process exited early (code ${code})`)));
    },
  );
  child.removeAllListeners('exit');
  return {
    ...ready,
    pid: child.pid as number,
    dataDir,
    profileDir,
    collectGarbage() {
      return new Promise((resolve) => {
        const onMessage = (message: { type?: string; memory?: NodeJS.MemoryUsage }) => {
          if (message.type !== 'gc-done') return;
          child.off('message', onMessage);
          resolve(message.memory as NodeJS.MemoryUsage);
        };
        child.on('message', onMessage);
        child.send({ type: 'gc' });
      });
    },
    async stop() {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'stop' });
      await exited;
      if (!profileDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The Node flags the `mcloud` bin runs with (its `#!/usr/bin/env -S node …` line), so the bench runs the same. */
export async function cloudNodeFlags(): Promise<string[]> {
  const bin = path.resolve(import.meta.dirname, '../../apps/cloud/src/bin/mcloud.ts');
  const shebang = (await readFile(bin, 'utf8')).split('\n', 1)[0] ?? '';
  const match = /^#!\/usr\/bin\/env -S node((?: --[\w-]+(?:=\S+)?)*)$/.exec(shebang);
  if (!match) throw new Error(`unexpected first line in ${bin}: ${shebang}`);
  return (match[1] ?? '').split(' ').filter(Boolean);
}

/** Removes the data directory kept for a profile (after the profile was read). */
export async function removeDataDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export async function findProfile(profileDir: string): Promise<string | undefined> {
  const files = (await readdir(profileDir)).filter((f) => f.endsWith('.cpuprofile'));
  return files[0] && path.join(profileDir, files[0]);
}

/** Resident set size of a process from /proc/<pid>/status, in bytes (VmRSS; VmHWM is the peak). */
export async function processMemory(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 'NaN') * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const clockTicks = 100; // USER_HZ on Linux

/** CPU seconds (user + system) used so far by `pid` and, separately, by all its descendants. */
export async function processTreeCpu(pid: number): Promise<{ self: number; descendants: number }> {
  const entries = await readdir('/proc');
  const stats = new Map<number, { ppid: number; cpu: number; reaped: number }>();
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (e) => {
        try {
          const text = await readFile(`/proc/${e}/stat`, 'utf8');
          // Fields after the parenthesised command name: state ppid ... utime(14) stime(15)
          const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
          stats.set(Number(e), {
            ppid: Number(rest[1]),
            cpu: (Number(rest[11]) + Number(rest[12])) / clockTicks,
            // cutime + cstime: exited children already reaped (PostgreSQL backends the pool closed).
            reaped: (Number(rest[13]) + Number(rest[14])) / clockTicks,
          });
        } catch {}
      }),
  );
  const children = new Map<number, number[]>();
  for (const [child, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), child]);
  let descendants = 0;
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length) {
    const next = queue.pop() as number;
    const stat = stats.get(next);
    descendants += (stat?.cpu ?? 0) + (stat?.reaped ?? 0);
    queue.push(...(children.get(next) ?? []));
  }
  return { self: stats.get(pid)?.cpu ?? 0, descendants };
}
