/**
 * The data manager service's attributes (machine-runtime.md A5.1), parsed once into one typed object
 * with units in names. Every mistake names the field path, the value and the rule.
 */
import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import { invalidConfig } from '../errors.ts';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.ts';

export interface CaptureControlSensorConfig {
  /** Short name of the sensor. */
  readonly name: string;
  /** The reading key that holds the overrides. */
  readonly key: string;
}

export interface DataManagerConfig {
  /** Absolute directory capture files are written to. */
  readonly captureDir: string;
  /** Applied to every captured reading and every arbitrary file; replaces per-method tags when set. */
  readonly tags: readonly string[];
  readonly captureDisabled: boolean;
  readonly syncDisabled: boolean;
  readonly syncIntervalMs: number;
  /** Absolute directories whose files are uploaded with FileUpload. */
  readonly additionalSyncPaths: readonly string[];
  readonly fileLastModifiedMs: number;
  readonly maximumNumSyncThreads: number;
  readonly maximumCaptureFileSizeBytes: number;
  readonly deleteEveryNthWhenDiskFull: number;
  readonly diskUsageDeletionThreshold: number;
  readonly captureDirDeletionThreshold: number;
  /** Sensor whose `should_sync` reading gates scheduled sync; empty = always sync. */
  readonly selectiveSyncerName: string;
  readonly captureControlSensor?: CaptureControlSensorConfig;
  /** Set when `mongo_capture_config` was given (not supported here: the service warns and ignores it). */
  readonly mongoCaptureConfigured: boolean;
}

export interface DataManagerConfigContext {
  /** `$VIAM_HOME` (default `~/.viam`). */
  readonly viamHome: string;
  /** `-untrusted-env`: `capture_dir` may not be changed. */
  readonly untrustedEnv?: boolean;
  readonly cpuCount?: number;
}

export const defaultSyncIntervalMins = 0.1;
export const defaultFileLastModifiedMillis = 10_000;
export const defaultMaximumCaptureFileSizeBytes = 256 * 1024;
export const defaultDeleteEveryNthWhenDiskFull = 5;
export const defaultDiskUsageDeletionThreshold = 0.9;
export const defaultCaptureDirDeletionThreshold = 0.5;
/** `sync_interval_mins` below this counts as unset. */
const minimumSyncIntervalMins = 0.0001;

const knownKeys = new Set([
  'capture_dir',
  'tags',
  'capture_disabled',
  'sync_disabled',
  'sync_interval_mins',
  'additional_sync_paths',
  'file_last_modified_millis',
  'maximum_num_sync_threads',
  'maximum_capture_file_size_bytes',
  'delete_every_nth_when_disk_full',
  'disk_usage_deletion_threshold',
  'capture_dir_deletion_threshold',
  'selective_syncer_name',
  'mongo_capture_config',
  'capture_control_sensor',
]);

/** `$VIAM_HOME`, else `~/.viam`. */
export function defaultViamHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.VIAM_HOME && env.VIAM_HOME !== '' ? env.VIAM_HOME : path.join(homedir(), '.viam');
}

/** Unknown keys are returned so the caller can warn about them (they are not errors, as in the reference). */
export function unknownDataManagerKeys(attributes: JsonObject): string[] {
  return Object.keys(attributes).filter((key) => !knownKeys.has(key));
}

/** Parses `services[i].attributes`; `at` is that path (e.g. `services[2].attributes`). */
export function parseDataManagerConfig(
  attributes: JsonObject,
  at: string,
  context: DataManagerConfigContext,
): DataManagerConfig {
  const field = (key: string) => `${at}.${key}`;
  const defaultCaptureDir = path.join(context.viamHome, 'capture');
  let captureDir = defaultCaptureDir;
  const rawCaptureDir = attributes.capture_dir;
  if (rawCaptureDir !== undefined && rawCaptureDir !== null && rawCaptureDir !== '') {
    captureDir = expandDir(rawCaptureDir, field('capture_dir'));
    if (context.untrustedEnv && captureDir !== defaultCaptureDir) {
      throw invalidConfig(
        field('capture_dir'),
        `may not be changed in an untrusted environment (-untrusted-env); it must stay ${defaultCaptureDir}`,
        rawCaptureDir,
      );
    }
  }
  const syncIntervalMins = optionalNumber(attributes.sync_interval_mins, field('sync_interval_mins'));
  const cpuCount = context.cpuCount ?? availableParallelism();
  const config: DataManagerConfig = {
    captureDir,
    tags: stringList(attributes.tags, field('tags')),
    captureDisabled: optionalBoolean(attributes.capture_disabled, field('capture_disabled')) ?? false,
    syncDisabled: optionalBoolean(attributes.sync_disabled, field('sync_disabled')) ?? false,
    syncIntervalMs:
      Math.round(
        (syncIntervalMins === undefined || syncIntervalMins < minimumSyncIntervalMins
          ? defaultSyncIntervalMins
          : syncIntervalMins) * 60_000,
      ) || 1,
    additionalSyncPaths: stringList(attributes.additional_sync_paths, field('additional_sync_paths')).map(
      (entry, index) => expandDir(entry, `${field('additional_sync_paths')}[${index}]`),
    ),
    fileLastModifiedMs:
      optionalInteger(attributes.file_last_modified_millis, field('file_last_modified_millis')) ||
      defaultFileLastModifiedMillis,
    maximumNumSyncThreads:
      optionalInteger(attributes.maximum_num_sync_threads, field('maximum_num_sync_threads')) ||
      Math.max(1, Math.floor(cpuCount / 2)),
    maximumCaptureFileSizeBytes:
      optionalInteger(attributes.maximum_capture_file_size_bytes, field('maximum_capture_file_size_bytes')) ||
      defaultMaximumCaptureFileSizeBytes,
    deleteEveryNthWhenDiskFull:
      optionalInteger(attributes.delete_every_nth_when_disk_full, field('delete_every_nth_when_disk_full')) ||
      defaultDeleteEveryNthWhenDiskFull,
    diskUsageDeletionThreshold:
      fraction(attributes.disk_usage_deletion_threshold, field('disk_usage_deletion_threshold')) ||
      defaultDiskUsageDeletionThreshold,
    captureDirDeletionThreshold:
      fraction(attributes.capture_dir_deletion_threshold, field('capture_dir_deletion_threshold')) ||
      defaultCaptureDirDeletionThreshold,
    selectiveSyncerName:
      optionalString(attributes.selective_syncer_name, field('selective_syncer_name')) ?? '',
    mongoCaptureConfigured: parseMongoCaptureConfig(
      attributes.mongo_capture_config,
      field('mongo_capture_config'),
    ),
  };
  const control = parseCaptureControlSensor(
    attributes.capture_control_sensor,
    field('capture_control_sensor'),
  );
  return control ? { ...config, captureControlSensor: control } : config;
}

function expandDir(value: JsonValue, at: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalidConfig(at, 'must be a non-empty directory path', value);
  }
  let expanded = value.trim();
  if (expanded === '~' || expanded.startsWith('~/')) expanded = path.join(homedir(), expanded.slice(1));
  return path.resolve(expanded);
}

function stringList(value: JsonValue | undefined, at: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidConfig(at, 'must be an array of strings', value);
  return value.map((entry, index) => {
    if (typeof entry !== 'string' || entry === '') {
      throw invalidConfig(`${at}[${index}]`, 'must be a non-empty string', entry);
    }
    return entry;
  });
}

function optionalBoolean(value: JsonValue | undefined, at: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw invalidConfig(at, 'must be true or false', value);
  return value;
}

function optionalString(value: JsonValue | undefined, at: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidConfig(at, 'must be a string', value);
  return value;
}

function optionalNumber(value: JsonValue | undefined, at: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw invalidConfig(at, 'must be a number', value);
  if (value < 0) throw invalidConfig(at, 'must not be negative', value);
  return value;
}

/** A non-negative integer; 0 and absent both mean "use the default". */
function optionalInteger(value: JsonValue | undefined, at: string): number {
  const number = optionalNumber(value, at);
  if (number === undefined) return 0;
  if (!Number.isSafeInteger(number)) throw invalidConfig(at, 'must be a whole number', value);
  return number;
}

/** A fraction in [0, 1]; 0 and absent both mean "use the default". */
function fraction(value: JsonValue | undefined, at: string): number {
  const number = optionalNumber(value, at);
  if (number === undefined) return 0;
  if (number > 1) throw invalidConfig(at, 'must be a fraction between 0 and 1', value);
  return number;
}

function parseMongoCaptureConfig(value: JsonValue | undefined, at: string): boolean {
  if (value === undefined || value === null) return false;
  if (!isJsonObject(value)) throw invalidConfig(at, 'must be an object {uri, database, collection}', value);
  if (typeof value.uri !== 'string' || value.uri === '') throw invalidConfig(`${at}.uri`, 'is required');
  optionalString(value.database, `${at}.database`);
  optionalString(value.collection, `${at}.collection`);
  return true;
}

function parseCaptureControlSensor(
  value: JsonValue | undefined,
  at: string,
): CaptureControlSensorConfig | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value)) throw invalidConfig(at, 'must be an object {name, key}', value);
  const name = optionalString(value.name, `${at}.name`);
  const key = optionalString(value.key, `${at}.key`);
  if (!name) throw invalidConfig(`${at}.name`, 'is required (the sensor to poll)');
  if (!key) throw invalidConfig(`${at}.key`, 'is required (the reading key holding the overrides)');
  return { name, key };
}
