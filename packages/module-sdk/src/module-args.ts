/**
 * What the parent passes a module (machine-runtime.md A3.2, appendix §2.1, §5.1): the address in
 * `VIAM_MODULE_ADDRESS` or argv[1], `--log-level=<lvl>` and `--tcp-mode` anywhere in argv, and the
 * module's name and data directory in the environment.
 */
import { ModuleError } from './errors.ts';
import type { LogLevel } from './logger.ts';

export interface ModuleArgs {
  readonly address: string;
  /** `debug` only for `--log-level=debug` (any case); everything else is info (A4.5). */
  readonly logLevel: LogLevel;
  readonly tcpMode: boolean;
  readonly moduleName: string;
  /** `VIAM_MODULE_DATA`, when given. */
  readonly dataDir?: string;
  /** `VIAM_NO_MODULE_PARENT=true`: skip the connection back to the parent. */
  readonly noParent: boolean;
}

/** `argv` without the node binary and script (i.e. `process.argv.slice(2)`). */
export function parseModuleArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ModuleArgs {
  const positional = argv.filter((arg) => !arg.startsWith('--'));
  const address = env.VIAM_MODULE_ADDRESS || positional[0];
  if (!address) {
    throw new ModuleError(
      'InvalidArgument',
      'module address: give the socket path as the first argument or in VIAM_MODULE_ADDRESS',
    );
  }
  const levelArg = argv.find((arg) => arg.startsWith('--log-level='));
  const level = levelArg?.slice('--log-level='.length).toLowerCase();
  return {
    address,
    logLevel: level === 'debug' ? 'debug' : 'info',
    tcpMode: argv.includes('--tcp-mode'),
    moduleName: env.VIAM_MODULE_NAME || 'module',
    noParent: env.VIAM_NO_MODULE_PARENT === 'true',
    ...(env.VIAM_MODULE_DATA ? { dataDir: env.VIAM_MODULE_DATA } : {}),
  };
}
