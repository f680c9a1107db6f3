/**
 * How a module process is started (machine-runtime.md A3.1, A3.2, A4.5): executable path (`~`
 * expanded, relative to the machine-server's working dir), argv `<address> [--log-level=<lvl>]
 * [--tcp-mode]`, working dir `VIAM_MODULE_ROOT` or the executable's directory, and the environment:
 * inherited + VIAM_HOME, VIAM_MODULE_DATA, VIAM_MODULE_NAME, VIAM_MODULE_ID (registry),
 * VIAM_MODULE_ROOT (local), VIAM_MODULE_ADDRESS, then the module's `env` (which wins).
 * Beyond the spec, NODE_COMPILE_CACHE=`$VIAM_HOME/compile-cache/modules/<name>` unless the environment
 * already sets or disables Node's compile cache: a module written in TypeScript (like the module SDK's)
 * then restarts without loading Node's type stripper, ~25 MiB less RSS per module process
 * (bench/README.md); other programs ignore the variable.
 */
import { access, constants, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { LogPatternConfig, ModuleConfig } from '../config/machine-config.ts';
import { invalidConfig } from '../errors.ts';
import type { LogLevel } from '../logging/logger.ts';

export function resolveExecutablePath(config: ModuleConfig): string {
  const path = config.executablePath;
  const expanded = path === '~' ? homedir() : path.startsWith('~/') ? `${homedir()}${path.slice(1)}` : path;
  return isAbsolute(expanded) ? expanded : resolve(expanded);
}

/** Checks a local executable exists and can be run; errors name `modules[i].executable_path`. */
export async function checkExecutable(config: ModuleConfig, executable: string): Promise<void> {
  const field = `${config.path}.executable_path`;
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(executable);
  } catch {
    throw invalidConfig(field, 'does not exist', config.executablePath);
  }
  if (!info.isFile()) throw invalidConfig(field, 'is not a file', config.executablePath);
  try {
    await access(executable, constants.X_OK);
  } catch {
    throw invalidConfig(field, 'is not executable', config.executablePath);
  }
}

/**
 * `log_level` if set; else `debug` when the machine logs at debug (`-debug` / `debug: true`) or a
 * `log` pattern with level debug matches the module's name (A4.5); else none (the module's default).
 */
export function moduleLogLevel(
  config: ModuleConfig,
  globalDebug: boolean,
  patterns: readonly LogPatternConfig[],
): LogLevel | undefined {
  if (config.logLevel) return config.logLevel;
  if (globalDebug) return 'debug';
  let level: string | undefined;
  for (const { pattern, level: patternLevel } of patterns) {
    const regex = patternToRegex(pattern);
    if (regex?.test(config.name)) level = patternLevel.toLowerCase();
  }
  return level === 'debug' ? 'debug' : undefined;
}

/** A4.3: `^` + pattern with `*` → `.*` and `.` literal + `$`; undefined when it does not compile. */
function patternToRegex(pattern: string): RegExp | undefined {
  try {
    return new RegExp(`^${pattern.replaceAll('.', '\\.').replaceAll('*', '.*')}$`);
  } catch {
    return undefined;
  }
}

export interface ModuleEnvOptions {
  readonly inherited: Readonly<Record<string, string | undefined>>;
  readonly viamHome: string;
  readonly dataDir: string;
  readonly executable: string;
  /** The module directory (an unpacked tarball); default the executable's directory. */
  readonly moduleRoot?: string;
  readonly address: string;
}

export function moduleEnvironment(config: ModuleConfig, options: ModuleEnvOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.inherited)) if (value !== undefined) env[key] = value;
  env.VIAM_HOME = options.viamHome;
  env.VIAM_MODULE_DATA = options.dataDir;
  env.VIAM_MODULE_NAME = config.name;
  env.VIAM_MODULE_ADDRESS = options.address;
  if (config.type === 'registry' && config.moduleId) env.VIAM_MODULE_ID = config.moduleId;
  if (config.type === 'local') env.VIAM_MODULE_ROOT = options.moduleRoot ?? dirname(options.executable);
  else delete env.VIAM_MODULE_ROOT;
  if (env.NODE_COMPILE_CACHE === undefined && env.NODE_DISABLE_COMPILE_CACHE === undefined)
    env.NODE_COMPILE_CACHE = join(options.viamHome, 'compile-cache', 'modules', config.name);
  return { ...env, ...config.env };
}

/** A free `127.0.0.1` port (listen on 0, close) for a TCP-mode module. */
export function freeTcpAddress(): Promise<string> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const info = server.address();
      const port = info && typeof info === 'object' ? info.port : 0;
      server.close(() => resolvePort(`127.0.0.1:${port}`));
    });
  });
}

/** A3.6: with `-untrusted-env` only modules whose `module_id` namespace is `viam` may run. */
export function isTrustedModule(config: ModuleConfig): boolean {
  return config.type === 'registry' && (config.moduleId ?? '').split(':')[0] === 'viam';
}
