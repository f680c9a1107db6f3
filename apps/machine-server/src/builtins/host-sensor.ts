/**
 * `rdk:component:sensor` model `host` (`rdk:builtin:host`): readings of the computer the machine-server
 * runs on — CPU use since the previous reading (/proc/stat), load averages, memory (/proc/meminfo),
 * disk of `disk_path` (statfs, default `/`), the highest thermal zone temperature
 * (/sys/class/thermal/thermal_zone*\/temp, omitted when the host has none) and uptime.
 */
import { readdir, readFile, statfs } from 'node:fs/promises';
import { loadavg, uptime } from 'node:os';
import { MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import { type Readings, type Sensor, sensorApi } from '../resources/apis/sensor.ts';
import type { ModelRegistration } from '../resources/model-registry.ts';
import { builtinModel } from '../resources/resource-name.ts';
import { rejectUnknownAttributes, stringAttribute } from './attributes.ts';

export interface HostPaths {
  readonly proc: string;
  readonly thermal: string;
}

const defaultPaths: HostPaths = { proc: '/proc', thermal: '/sys/class/thermal' };

export function createHostSensorRegistration(paths: HostPaths = defaultPaths): ModelRegistration {
  return {
    api: sensorApi,
    model: builtinModel('host'),
    source: 'builtin',
    attributeSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { disk_path: { type: 'string', default: '/', description: 'file system to report' } },
    },
    validate(config) {
      rejectUnknownAttributes(config, ['disk_path']);
      stringAttribute(config, 'disk_path');
      return { requiredDeps: [], optionalDeps: [] };
    },
    async build({ config }) {
      const diskPath = stringAttribute(config, 'disk_path') ?? '/';
      await statfs(diskPath).catch((error: Error) => {
        throw new MachineError(
          'InvalidArgument',
          `${config.path}.attributes.disk_path: cannot statfs: ${error.message}`,
        );
      });
      let previous = await readCpuTimes(paths.proc);
      const sensor: Sensor = {
        name: config.resourceName,
        async getReadings() {
          const current = await readCpuTimes(paths.proc);
          const total = current.total - previous.total;
          const busy = total - (current.idle - previous.idle);
          previous = current;
          const [load1, load5, load15] = loadavg();
          const memory = await readMemory(paths.proc);
          const disk = await statfs(diskPath);
          const diskTotal = disk.blocks * disk.bsize;
          const diskFree = disk.bavail * disk.bsize;
          const readings: Readings = {
            cpu_percent: total > 0 ? round((busy / total) * 100) : 0,
            load_1m: round(load1 ?? 0),
            load_5m: round(load5 ?? 0),
            load_15m: round(load15 ?? 0),
            memory_total_bytes: memory.total,
            memory_available_bytes: memory.available,
            memory_used_percent:
              memory.total > 0 ? round(((memory.total - memory.available) / memory.total) * 100) : 0,
            disk_total_bytes: diskTotal,
            disk_free_bytes: diskFree,
            disk_used_percent: diskTotal > 0 ? round(((diskTotal - diskFree) / diskTotal) * 100) : 0,
            uptime_seconds: Math.round(uptime()),
          };
          const temperature = await readMaxTemperature(paths.thermal);
          if (temperature !== undefined) readings.temperature_celsius = temperature;
          return readings;
        },
        async doCommand(command: JsonObject) {
          throw new MachineError(
            'Unimplemented',
            `host sensor has no commands (got ${Object.keys(command).join(', ') || 'none'})`,
          );
        },
        async close() {},
      };
      return sensor;
    },
  };
}

async function readCpuTimes(proc: string): Promise<{ total: number; idle: number }> {
  const text = await readFile(`${proc}/stat`, 'utf8');
  const line = text.split('\n').find((entry) => entry.startsWith('cpu '));
  const values = (line ?? '').trim().split(/\s+/).slice(1).map(Number);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { total: values.reduce((sum, value) => sum + (Number.isFinite(value) ? value : 0), 0), idle };
}

async function readMemory(proc: string): Promise<{ total: number; available: number }> {
  const text = await readFile(`${proc}/meminfo`, 'utf8');
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) * 1024 : 0;
  };
  return { total: field('MemTotal'), available: field('MemAvailable') };
}

async function readMaxTemperature(thermal: string): Promise<number | undefined> {
  let zones: string[];
  try {
    zones = (await readdir(thermal)).filter((entry) => entry.startsWith('thermal_zone'));
  } catch {
    return undefined;
  }
  let max: number | undefined;
  for (const zone of zones) {
    try {
      const milli = Number((await readFile(`${thermal}/${zone}/temp`, 'utf8')).trim());
      if (Number.isFinite(milli)) max = Math.max(max ?? -Infinity, milli / 1000);
    } catch {
      // zones without a readable temperature are skipped
    }
  }
  return max;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
