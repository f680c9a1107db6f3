/**
 * Capture configuration on a component (machine-runtime.md A5.2):
 * `service_configs: [{type: "data_manager", attributes: {capture_methods: [{method,
 * capture_frequency_hz, additional_params, disabled, capture_queue_size, capture_buffer_size, tags,
 * recent_data_store: {stored_hours}}]}}]`.
 */
import { invalidConfig } from '../errors.ts';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.ts';
import type { AssociatedConfig } from '../resources/resource-config.ts';

export interface CaptureMethodConfig {
  readonly method: string;
  /** ≤ 0 (or ≈ 0) means the collector is disabled (with a warning). */
  readonly captureFrequencyHz: number;
  /** Passed to the capture call's `extra` (with `fromDataManagement: true`) and uploaded as method parameters. */
  readonly additionalParams: JsonObject;
  readonly disabled: boolean;
  readonly captureQueueSize: number;
  readonly captureBufferSize: number;
  readonly tags: readonly string[];
  /**
   * `recent_data_store.stored_hours`: how long the cloud should keep these readings in its hot store.
   * UploadMetadata (API v0.1.512) has no field for it, so it is validated and kept, not sent.
   */
  readonly recentDataStoredHours?: number;
  /** Path of this entry in the machine config, for messages. */
  readonly path: string;
}

export const defaultCaptureQueueSize = 250;
export const defaultCaptureBufferSize = 4096;
/** Frequencies below this are "≈ 0". */
export const minimumCaptureFrequencyHz = 1e-9;
const maximumQueueSize = 1_000_000;
const maximumBufferSize = 64 * 1024 * 1024;

/** `type` values that mean the data manager (`data_manager`, `rdk:service:data_manager`). */
export function isDataManagerServiceConfig(entry: AssociatedConfig): boolean {
  return entry.type === 'data_manager' || entry.type === 'rdk:service:data_manager';
}

/**
 * Every capture method configured on one resource. `at` is the resource's config path
 * (`components[3]`); service_configs of other types are ignored.
 */
export function parseCaptureMethods(
  serviceConfigs: readonly AssociatedConfig[],
  at: string,
): CaptureMethodConfig[] {
  const methods: CaptureMethodConfig[] = [];
  serviceConfigs.forEach((entry, entryIndex) => {
    if (!isDataManagerServiceConfig(entry)) return;
    const entryPath = `${at}.service_configs[${entryIndex}].attributes.capture_methods`;
    const list = entry.attributes.capture_methods;
    if (list === undefined || list === null) return;
    if (!Array.isArray(list)) throw invalidConfig(entryPath, 'must be an array of capture methods', list);
    list.forEach((raw, index) => {
      methods.push(parseCaptureMethod(raw, `${entryPath}[${index}]`));
    });
  });
  const seen = new Map<string, string>();
  for (const method of methods) {
    const key = `${method.method}\0${JSON.stringify(method.additionalParams)}`;
    const earlier = seen.get(key);
    if (earlier) {
      throw invalidConfig(
        `${method.path}.method`,
        `duplicates ${earlier} (same method and additional_params)`,
        method.method,
      );
    }
    seen.set(key, method.path);
  }
  return methods;
}

function parseCaptureMethod(raw: JsonValue, at: string): CaptureMethodConfig {
  if (!isJsonObject(raw))
    throw invalidConfig(at, 'must be an object {method, capture_frequency_hz, ...}', raw);
  const method = raw.method;
  if (typeof method !== 'string' || method.trim() === '') {
    throw invalidConfig(`${at}.method`, 'is required (e.g. "Readings")', method);
  }
  const frequency = raw.capture_frequency_hz ?? 0;
  if (typeof frequency !== 'number' || !Number.isFinite(frequency)) {
    throw invalidConfig(`${at}.capture_frequency_hz`, 'must be a number', frequency);
  }
  if (frequency < 0) throw invalidConfig(`${at}.capture_frequency_hz`, 'must not be negative', frequency);
  const params = raw.additional_params ?? {};
  if (!isJsonObject(params)) throw invalidConfig(`${at}.additional_params`, 'must be an object', params);
  const disabled = raw.disabled ?? false;
  if (typeof disabled !== 'boolean') throw invalidConfig(`${at}.disabled`, 'must be true or false', disabled);
  const config: CaptureMethodConfig = {
    method: method.trim(),
    captureFrequencyHz: frequency,
    additionalParams: params,
    disabled,
    captureQueueSize:
      sizeOption(raw.capture_queue_size, `${at}.capture_queue_size`, maximumQueueSize) ||
      defaultCaptureQueueSize,
    captureBufferSize:
      sizeOption(raw.capture_buffer_size, `${at}.capture_buffer_size`, maximumBufferSize) ||
      defaultCaptureBufferSize,
    tags: tagList(raw.tags, `${at}.tags`),
    path: at,
  };
  const storedHours = recentDataStoredHours(raw.recent_data_store, `${at}.recent_data_store`);
  return storedHours === undefined ? config : { ...config, recentDataStoredHours: storedHours };
}

function sizeOption(value: JsonValue | undefined, at: string, maximum: number): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidConfig(at, 'must be a non-negative whole number', value);
  }
  if (value > maximum) throw invalidConfig(at, `must be at most ${maximum}`, value);
  return value;
}

function tagList(value: JsonValue | undefined, at: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidConfig(at, 'must be an array of strings', value);
  return value.map((tag, index) => {
    if (typeof tag !== 'string' || tag === '')
      throw invalidConfig(`${at}[${index}]`, 'must be a non-empty string', tag);
    return tag;
  });
}

function recentDataStoredHours(value: JsonValue | undefined, at: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value)) throw invalidConfig(at, 'must be an object {stored_hours}', value);
  const hours = value.stored_hours;
  if (hours === undefined || hours === null) return undefined;
  if (typeof hours !== 'number' || !Number.isSafeInteger(hours) || hours < 0) {
    throw invalidConfig(`${at}.stored_hours`, 'must be a non-negative whole number of hours', hours);
  }
  return hours;
}
