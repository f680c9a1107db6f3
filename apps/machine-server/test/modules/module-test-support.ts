/**
 * Test support for the module manager: a capturing logger, a resource lookup over a map (with a
 * built-in-like sensor), module configs, and waiting helpers.
 */
import { copyFile, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ModuleConfig } from '../../src/config/machine-config.ts';
import { MachineError } from '../../src/errors.ts';
import type { Logger, LogLevel } from '../../src/logging/logger.ts';
import { createLogging } from '../../src/logging/logging-system.ts';
import type { ResourceLookup } from '../../src/machine-host.ts';
import type { Sensor } from '../../src/resources/apis/sensor.ts';
import type { Resource } from '../../src/resources/resource.ts';
import {
  type Api,
  apiEquals,
  createResourceName,
  formatResourceName,
  type ResourceName,
  shortName,
} from '../../src/resources/resource-name.ts';

export const repoRoot = join(import.meta.dirname, '..', '..', '..', '..');
export const counterExecutable = join(
  repoRoot,
  'packages',
  'module-sdk',
  'examples',
  'counter-sensor',
  'counter-sensor',
);
export const fixtures = join(import.meta.dirname, 'fixtures');

export interface LogLine {
  readonly logger: string;
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>> | undefined;
}

/** Records every entry at every level. */
export function createCapturingLogger(
  name = 'rdk.modmanager',
  lines: LogLine[] = [],
): Logger & { lines: LogLine[] } {
  const emit = (level: LogLevel) => (message: string, fields?: Readonly<Record<string, unknown>>) => {
    lines.push({ logger: name, level, message, fields });
  };
  return {
    name,
    lines,
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (child) => createCapturingLogger(`${name}.${child}`, lines),
  };
}

/**
 * The real logging system at its default level (info), its output lines parsed back: what an operator
 * would see. Module entries are not level-filtered by the parent.
 */
export function createLoggingCapture(name = 'rdk.modmanager'): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logging = createLogging({
    captureCallers: false,
    writeStdout: (line) => {
      const [, level, logger, message, fields] = line.split('\t');
      lines.push({
        logger: logger ?? '',
        level: (level ?? '').toLowerCase() as LogLevel,
        message: message ?? '',
        fields: fields ? JSON.parse(fields) : undefined,
      });
    },
  });
  return { logger: logging.loggerFor(name), lines };
}

/** A ResourceLookup over a map the test fills. */
export function createMapLookup(): ResourceLookup & { resources: Map<string, Resource> } {
  const resources = new Map<string, Resource>();
  return {
    resources,
    names: () => [...resources.values()].map((resource) => resource.name),
    get: (name) => resources.get(formatResourceName(name)),
    findByShortName(api: Api, name: string) {
      const found = [...resources.values()].find(
        (r) => apiEquals(r.name.api, api) && shortName(r.name) === name,
      );
      if (!found) throw new MachineError('NotFound', `resource ${name} not found`);
      return found;
    },
  };
}

export function fixedSensor(name: ResourceName, readings: Record<string, number>): Sensor {
  return {
    name,
    getReadings: async () => readings,
    doCommand: async () => ({}),
    close: async () => {},
  };
}

export function sensorName(name: string): ResourceName {
  return createResourceName({ namespace: 'rdk', type: 'component', subtype: 'sensor' }, name);
}

export function moduleConfig(
  name: string,
  executablePath: string,
  extra: Partial<ModuleConfig> = {},
): ModuleConfig {
  return {
    name,
    executablePath,
    type: 'local',
    env: {},
    tcpMode: false,
    firstRunTimeoutMs: 3_600_000,
    path: `modules[${name}]`,
    ...extra,
  };
}

/** A private copy of an executable (modules may not share one), symlinked so it finds its sources. */
export async function linkExecutable(dir: string, target: string, name: string): Promise<string> {
  const path = join(dir, name);
  await symlink(target, path);
  return path;
}

export async function copyExecutable(dir: string, source: string, name: string): Promise<string> {
  const path = join(dir, name);
  await copyFile(source, path);
  return path;
}

export async function tempDir(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
