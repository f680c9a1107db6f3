/** Hand-built resources, loggers and directories for the data manager tests. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MachineError } from '../../src/errors.ts';
import type { JsonObject } from '../../src/json.ts';
import type { LogFields, Logger, LogLevel } from '../../src/logging/logger.ts';
import { type Camera, cameraApi } from '../../src/resources/apis/camera.ts';
import { type Readings, type Sensor, sensorApi } from '../../src/resources/apis/sensor.ts';
import { createResourceName } from '../../src/resources/resource-name.ts';

export async function makeTempDir(prefix = 'ms-data-'): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A sensor whose readings come from `read` (numbered calls: the first is 1). */
export function fakeSensor(
  name: string,
  read: (call: number) => Readings | Promise<Readings>,
): Sensor & {
  calls(): number;
} {
  let calls = 0;
  return {
    name: createResourceName(sensorApi, name),
    async getReadings() {
      calls++;
      return read(calls);
    },
    async doCommand(command: JsonObject) {
      return { echo: command };
    },
    async close() {},
    calls: () => calls,
  };
}

/** A camera answering `frame(call)` as `mimeType` for GetImage and GetImages. */
export function fakeCamera(
  name: string,
  mimeType: string,
  frame: (call: number) => Uint8Array,
): Camera & {
  calls(): number;
} {
  let calls = 0;
  const next = () => {
    calls++;
    return frame(calls);
  };
  return {
    name: createResourceName(cameraApi, name),
    async getImage() {
      return { mimeType, image: next() };
    },
    async getImages() {
      return { images: [{ sourceName: name, mimeType, image: next() }], capturedAt: new Date() };
    },
    async getProperties() {
      return { supportsPcd: false, mimeTypes: [mimeType] };
    },
    async doCommand() {
      throw new MachineError('Unimplemented', 'DoCommand is not implemented');
    },
    async close() {},
    calls: () => calls,
  };
}

export interface LogEntry {
  level: LogLevel;
  name: string;
  message: string;
  fields?: LogFields;
}

/** A logger that keeps every entry (children share the list). */
export function createRecordingLogger(
  name = 'rdk',
  entries: LogEntry[] = [],
): Logger & { entries: LogEntry[] } {
  const emit = (level: LogLevel) => (message: string, fields?: LogFields) => {
    entries.push(fields ? { level, name, message, fields } : { level, name, message });
  };
  return {
    name,
    entries,
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (child) => createRecordingLogger(`${name}.${child}`, entries),
  };
}

/** Every file under `dir`, relative, sorted. */
export async function listFiles(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
      .sort();
  } catch {
    return [];
  }
}

/** Polls `check` until it returns a truthy value (or fails after `timeoutMs`). */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
