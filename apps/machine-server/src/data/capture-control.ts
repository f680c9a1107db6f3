/**
 * `capture_control_sensor: {name, key}` (machine-runtime.md A5.1): a sensor polled at 10 Hz whose
 * reading `key` holds per-method overrides of the configured capture, e.g.
 * `[{"resource_name": "rdk:component:camera/cam" (or "cam"), "method": "ReadImage",
 *    "capture_frequency_hz": 5, "tags": ["event"], "disabled": false}]`.
 * An override changes the matching configured method (any additional_params) or, when none is
 * configured, adds the method; a missing key means "no overrides" (back to the configuration).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, invalidConfig } from '../errors.ts';
import { isJsonObject, type JsonValue } from '../json.ts';
import type { Logger } from '../logging/logger.ts';
import { isSensor } from '../resources/apis/sensor.ts';
import type { Resource } from '../resources/resource.ts';
import { formatResourceName, shortName } from '../resources/resource-name.ts';
import {
  type CaptureMethodConfig,
  defaultCaptureBufferSize,
  defaultCaptureQueueSize,
} from './capture-method-config.ts';
import type { CaptureTarget } from './capture-set.ts';
import type { CaptureControlSensorConfig } from './data-manager-config.ts';

export interface CaptureOverride {
  /** Full resource name or short name. */
  readonly resourceName: string;
  readonly method: string;
  readonly captureFrequencyHz?: number;
  readonly tags?: readonly string[];
  readonly disabled?: boolean;
}

export const captureControlIntervalMs = 100;

/** Parses the overrides in a reading; `at` names the reading key in messages. */
export function parseCaptureOverrides(value: JsonValue | undefined, at: string): CaptureOverride[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidConfig(at, 'must be a list of overrides', value);
  return value.map((entry, index) => {
    const path = `${at}[${index}]`;
    if (!isJsonObject(entry))
      throw invalidConfig(path, 'must be an object {resource_name, method, ...}', entry);
    const { resource_name: resourceName, method, capture_frequency_hz: hz, tags, disabled } = entry;
    if (typeof resourceName !== 'string' || resourceName === '') {
      throw invalidConfig(`${path}.resource_name`, 'is required', resourceName);
    }
    if (typeof method !== 'string' || method === '')
      throw invalidConfig(`${path}.method`, 'is required', method);
    if (hz !== undefined && (typeof hz !== 'number' || !Number.isFinite(hz) || hz < 0)) {
      throw invalidConfig(`${path}.capture_frequency_hz`, 'must be a non-negative number', hz);
    }
    if (tags !== undefined && (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string'))) {
      throw invalidConfig(`${path}.tags`, 'must be a list of strings', tags);
    }
    if (disabled !== undefined && typeof disabled !== 'boolean') {
      throw invalidConfig(`${path}.disabled`, 'must be true or false', disabled);
    }
    return {
      resourceName,
      method,
      ...(hz === undefined ? {} : { captureFrequencyHz: hz as number }),
      ...(tags === undefined ? {} : { tags: tags as string[] }),
      ...(disabled === undefined ? {} : { disabled: disabled as boolean }),
    };
  });
}

function matches(resource: Resource, name: string): boolean {
  return formatResourceName(resource.name) === name || shortName(resource.name) === name;
}

/** The configured targets with `overrides` applied (resources from `resources` may be added). */
export function applyCaptureOverrides(
  base: readonly CaptureTarget[],
  resources: readonly Resource[],
  overrides: readonly CaptureOverride[],
): CaptureTarget[] {
  const targets = new Map<Resource, CaptureMethodConfig[]>();
  for (const target of base) targets.set(target.resource, [...target.methods]);
  overrides.forEach((override, index) => {
    const resource =
      [...targets.keys()].find((candidate) => matches(candidate, override.resourceName)) ??
      resources.find((candidate) => matches(candidate, override.resourceName));
    if (!resource) return;
    const methods = targets.get(resource) ?? [];
    const change = (method: CaptureMethodConfig): CaptureMethodConfig => ({
      ...method,
      ...(override.captureFrequencyHz === undefined
        ? {}
        : { captureFrequencyHz: override.captureFrequencyHz }),
      ...(override.tags === undefined ? {} : { tags: override.tags }),
      ...(override.disabled === undefined ? {} : { disabled: override.disabled }),
    });
    if (methods.some((method) => method.method === override.method)) {
      targets.set(
        resource,
        methods.map((method) => (method.method === override.method ? change(method) : method)),
      );
    } else {
      methods.push(
        change({
          method: override.method,
          captureFrequencyHz: 0,
          additionalParams: {},
          disabled: false,
          captureQueueSize: defaultCaptureQueueSize,
          captureBufferSize: defaultCaptureBufferSize,
          tags: [],
          path: `capture_control_sensor override ${index}`,
        }),
      );
      targets.set(resource, methods);
    }
  });
  return [...targets.entries()].map(([resource, methods]) => ({ resource, methods }));
}

export interface CaptureControlOptions {
  readonly control: CaptureControlSensorConfig;
  readonly base: readonly CaptureTarget[];
  readonly resources: readonly Resource[];
  readonly apply: (targets: CaptureTarget[]) => Promise<void>;
  readonly logger: Logger;
  readonly intervalMs?: number;
}

/** Polls the control sensor until `signal` aborts; applies the overrides whenever they change. */
export async function runCaptureControl(options: CaptureControlOptions, signal: AbortSignal): Promise<void> {
  const { control, logger } = options;
  let applied = '[]';
  let lastProblem = '';
  const problem = (message: string, fields?: Record<string, unknown>) => {
    if (message === lastProblem) return;
    lastProblem = message;
    logger.warn(message, { capture_control_sensor: control.name, ...fields });
  };
  while (!signal.aborted) {
    try {
      await sleep(options.intervalMs ?? captureControlIntervalMs, undefined, { signal });
    } catch {
      return;
    }
    const sensor = options.resources.find(
      (resource) =>
        isSensor(resource) &&
        (shortName(resource.name) === control.name || resource.name.name === control.name),
    );
    if (!sensor || !isSensor(sensor)) {
      problem('capture control sensor not found; using the configured capture');
      continue;
    }
    let overrides: CaptureOverride[];
    try {
      const readings = await sensor.getReadings({ signal });
      overrides = parseCaptureOverrides(readings[control.key], `readings.${control.key}`);
    } catch (error) {
      if (signal.aborted) return;
      problem('capture control sensor reading unusable; keeping the current capture', {
        error: errorMessage(error),
      });
      continue;
    }
    lastProblem = '';
    const text = JSON.stringify(overrides);
    if (text === applied) continue;
    applied = text;
    logger.info('capture overrides changed', { overrides: text });
    await options.apply(applyCaptureOverrides(options.base, options.resources, overrides));
  }
}
