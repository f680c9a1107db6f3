/**
 * Command-line options of `machine-server` (service-spec.md "Machine-server command-line options",
 * machine-runtime.md A6), with Go `flag` semantics: `-name value`, `-name=value`, `--name` also
 * accepted; booleans as `-x`, `-x=true|false`. Parsed once into one typed object.
 */
import { homedir } from 'node:os';
import path from 'node:path';
import { diagnosticsTuningFromEnv } from '../diagnostics/diagnostics-tuning.ts';
import { errorMessage } from '../errors.ts';
import type { MachineServerOptions } from '../machine-host.ts';

interface FlagSpec {
  readonly name: string;
  readonly kind: 'bool' | 'string';
  readonly defaultValue?: boolean;
  readonly argument?: string;
  readonly help: string;
}

export const flagSpecs: readonly FlagSpec[] = [
  {
    name: 'allow-insecure-creds',
    kind: 'bool',
    help: 'Allow credentials over plaintext connections (http:// cloud addresses other than localhost)',
  },
  {
    name: 'config',
    kind: 'string',
    argument: '<filename>',
    help: 'Configuration file with machine cloud credentials or a full configuration',
  },
  {
    name: 'cpuprofile',
    kind: 'string',
    argument: '<file>',
    help: 'Write a CPU profile (.cpuprofile, Chrome DevTools format) of the whole run to the file',
  },
  { name: 'debug', kind: 'bool', help: 'Enable debug logs' },
  { name: 'disable-mdns', kind: 'bool', help: 'Disable discovery over multicast DNS' },
  {
    name: 'dump-resources',
    kind: 'string',
    argument: '<filepath>',
    help: 'Write all resource registrations (api, model, attribute schema) as JSON to the path and exit',
  },
  {
    name: 'ftdc',
    kind: 'bool',
    defaultValue: true,
    help: 'Full-time diagnostic data capture to rotating files under $VIAM_HOME/diagnostics.data, uploaded to the cloud when cloud managed (default true; -ftdc=false disables)',
  },
  {
    name: 'log-file',
    kind: 'string',
    argument: '<filename>',
    help: 'Write logs to a file with rotation (instead of stdout)',
  },
  {
    name: 'network-check',
    kind: 'bool',
    help: 'Run only the network checks (DNS, STUN over UDP and TCP, cloud reachability), log the results and exit. Without it they run once in the background at start-up',
  },
  {
    name: 'no-tls',
    kind: 'bool',
    help: 'Start an insecure HTTP server without TLS, even if certificates exist',
  },
  {
    name: 'output-telemetry',
    kind: 'bool',
    help: 'Print process and resource metrics to stdout every 10 seconds (one JSON line each)',
  },
  {
    name: 'reveal-sensitive-config-diffs',
    kind: 'bool',
    help: 'Log configuration diffs at debug level (secrets are still masked)',
  },
  {
    name: 'shareddir',
    kind: 'string',
    argument: '<directory-name>',
    help: 'Location of static web assets served by the web server',
  },
  {
    name: 'untrusted-env',
    kind: 'bool',
    help: 'Untrusted environment: no processes or shell; only trusted (viam namespace) modules',
  },
  { name: 'version', kind: 'bool', help: 'Print version and exit' },
  {
    name: 'webprofile',
    kind: 'bool',
    help: 'Include the profiler (/debug/pprof, /debug/graph) in the HTTP server',
  },
  {
    name: 'webrtc',
    kind: 'bool',
    defaultValue: true,
    help: 'Prefer WebRTC over direct connections (default true). NOTE: WebRTC is not implemented yet; connections are always direct (gRPC / gRPC-web)',
  },
];

export type ParsedFlags =
  | { kind: 'help'; text: string }
  | { kind: 'error'; message: string; text: string }
  | { kind: 'run'; flags: MachineServerFlags };

export interface MachineServerFlags {
  readonly config?: string;
  readonly dumpResources?: string;
  readonly version: boolean;
  readonly networkCheck: boolean;
  readonly options: Omit<MachineServerOptions, 'configPath'>;
}

export function helpText(): string {
  const lines = flagSpecs.map((spec) => {
    const head = `  -${spec.name}${spec.argument ? ` ${spec.argument}` : ''}`;
    return `${head}\n      ${spec.help}`;
  });
  return `Usage: machine-server -config <file> [options]\n\nOptions:\n${lines.join('\n')}\n  -h, -help\n      Print this help\n`;
}

export function parseMachineServerFlags(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedFlags {
  const values = new Map<string, string | boolean>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('-') || arg === '-' || arg === '--') {
      return { kind: 'error', message: `unexpected argument ${JSON.stringify(arg)}`, text: helpText() };
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    if (name === 'h' || name === 'help') return { kind: 'help', text: helpText() };
    const spec = flagSpecs.find((candidate) => candidate.name === name);
    if (!spec) return { kind: 'error', message: `flag provided but not defined: -${name}`, text: helpText() };
    if (spec.kind === 'bool') {
      const raw = eq >= 0 ? body.slice(eq + 1) : 'true';
      const value = parseBool(raw);
      if (value === undefined) {
        return {
          kind: 'error',
          message: `invalid boolean value ${JSON.stringify(raw)} for -${name}`,
          text: helpText(),
        };
      }
      values.set(name, value);
    } else {
      let value: string | undefined;
      if (eq >= 0) value = body.slice(eq + 1);
      else value = argv[++i];
      if (value === undefined || value === '') {
        return {
          kind: 'error',
          message: `flag needs an argument: -${name} ${spec.argument ?? ''}`.trim(),
          text: helpText(),
        };
      }
      values.set(name, value);
    }
  }
  const bool = (name: string) => {
    const spec = flagSpecs.find((candidate) => candidate.name === name);
    const value = values.get(name);
    return typeof value === 'boolean' ? value : (spec?.defaultValue ?? false);
  };
  const str = (name: string) => {
    const value = values.get(name);
    return typeof value === 'string' ? value : undefined;
  };
  const viamHome =
    env.VIAM_HOME && env.VIAM_HOME !== '' ? env.VIAM_HOME : path.join(env.HOME ?? homedir(), '.viam');
  const logFile = str('log-file') ?? undefined;
  let diagnostics: MachineServerOptions['diagnostics'];
  try {
    diagnostics = diagnosticsTuningFromEnv(env);
  } catch (error) {
    return { kind: 'error', message: errorMessage(error), text: helpText() };
  }
  const options: Omit<MachineServerOptions, 'configPath'> = {
    debug: bool('debug'),
    disableMdns: bool('disable-mdns'),
    noTls: bool('no-tls'),
    allowInsecureCreds: bool('allow-insecure-creds'),
    webrtc: bool('webrtc'),
    webProfile: bool('webprofile'),
    untrustedEnv: bool('untrusted-env'),
    revealSensitiveConfigDiffs: bool('reveal-sensitive-config-diffs'),
    outputTelemetry: bool('output-telemetry'),
    ftdc: bool('ftdc'),
    diagnostics,
    viamHome,
    env: { ...env, VIAM_HOME: viamHome },
    ...(logFile ? { logFile } : {}),
    ...(str('cpuprofile') ? { cpuProfile: str('cpuprofile') as string } : {}),
    ...(str('shareddir') ? { sharedDir: str('shareddir') as string } : {}),
  };
  const config = str('config');
  const dumpResources = str('dump-resources');
  return {
    kind: 'run',
    flags: {
      version: bool('version'),
      networkCheck: bool('network-check'),
      options,
      ...(config ? { config } : {}),
      ...(dumpResources ? { dumpResources } : {}),
    },
  };
}

function parseBool(raw: string): boolean | undefined {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw)) return false;
  return undefined;
}
