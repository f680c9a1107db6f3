/**
 * The module first-run script (machine-runtime.md A3.3): unless `<module root>.first_run_succeeded`
 * exists, read `<module root>/meta.json`; when it names a `first_run` script, run it (cwd = module
 * root, the module's environment, timeout `first_run_timeout`, stdout at INFO, stderr at WARN) and
 * create the marker on success. No meta.json or no `first_run` → nothing to do. A failure throws
 * (the reconfigure pass is aborted, A2.4 step 5).
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { errorMessage, MachineError } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';

export interface FirstRunOptions {
  readonly moduleName: string;
  readonly moduleRoot: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

export type FirstRunResult = 'already-succeeded' | 'no-first-run' | 'succeeded';

export function firstRunMarkerPath(moduleRoot: string): string {
  return `${moduleRoot.replace(/\/+$/, '')}.first_run_succeeded`;
}

export async function runFirstRun(options: FirstRunOptions): Promise<FirstRunResult> {
  const marker = firstRunMarkerPath(options.moduleRoot);
  if (await exists(marker)) return 'already-succeeded';
  const script = await readFirstRunScript(options.moduleRoot, options.moduleName);
  if (!script) return 'no-first-run';
  options.logger.info('running module first run script', { script });
  const exit = await runScript(script, options);
  if (exit !== 0) {
    throw new MachineError(
      'FailedPrecondition',
      `module ${options.moduleName}: first run script ${script} failed (${exit})`,
    );
  }
  await writeFile(marker, '', { mode: 0o644 });
  options.logger.info('module first run script succeeded', { script });
  return 'succeeded';
}

async function readFirstRunScript(moduleRoot: string, moduleName: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(join(moduleRoot, 'meta.json'), 'utf8');
  } catch {
    return undefined;
  }
  let meta: unknown;
  try {
    meta = JSON.parse(text);
  } catch (error) {
    throw new MachineError(
      'InvalidArgument',
      `module ${moduleName}: meta.json does not parse: ${errorMessage(error)}`,
    );
  }
  const firstRun = (meta as { first_run?: unknown } | null)?.first_run;
  if (firstRun === undefined || firstRun === '') return undefined;
  if (typeof firstRun !== 'string') {
    throw new MachineError(
      'InvalidArgument',
      `module ${moduleName}: meta.json first_run must be a path (got ${JSON.stringify(firstRun)})`,
    );
  }
  const script = resolve(moduleRoot, firstRun);
  const inside = relative(moduleRoot, script);
  if (inside.startsWith('..') || isAbsolute(inside)) {
    throw new MachineError(
      'InvalidArgument',
      `module ${moduleName}: meta.json first_run ${JSON.stringify(firstRun)} is outside the module directory`,
    );
  }
  return script;
}

function runScript(script: string, options: FirstRunOptions): Promise<string | 0> {
  return new Promise((resolveExit) => {
    const child = spawn(script, [], {
      cwd: options.moduleRoot,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(kill, options.timeoutMs);
    options.signal.addEventListener('abort', kill, { once: true });
    if (child.stdout)
      createInterface({ input: child.stdout }).on('line', (line) => options.logger.info(line));
    if (child.stderr)
      createInterface({ input: child.stderr }).on('line', (line) => options.logger.warn(line));
    const done = (result: string | 0) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', kill);
      resolveExit(result);
    };
    child.once('error', (error) => done(error.message));
    child.once('exit', (code, signal) => {
      if (code === 0) done(0);
      else if (signal === 'SIGKILL' && !options.signal.aborted)
        done(`timed out after ${options.timeoutMs} ms`);
      else done(signal ? `killed by ${signal}` : `exit code ${code}`);
    });
  });
}

async function exists(path: string): Promise<boolean> {
  try {
    await readFile(path);
    return true;
  } catch {
    return false;
  }
}
