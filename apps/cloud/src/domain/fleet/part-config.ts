import { failedPrecondition, invalidArgument } from '../errors.ts';
import { parseTriggers } from '../triggers/trigger-config.ts';
import { fleetLimits } from './fleet-context.ts';

/**
 * Checks a machine part's JSON configuration before it is stored: a JSON object within the size limit,
 * with the well-known top-level sections of the right shape. Unknown keys are kept (newer machines may
 * understand them).
 */
export function validatePartConfig(field: string, config: unknown): Record<string, unknown> {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw invalidArgument(field, 'must be a JSON object');
  }
  const bytes = Buffer.byteLength(JSON.stringify(config), 'utf8');
  if (bytes > fleetLimits.configMaxBytes) {
    throw invalidArgument(
      field,
      `must be at most ${fleetLimits.configMaxBytes} bytes of JSON`,
      `${bytes} bytes`,
    );
  }
  const record = config as Record<string, unknown>;
  for (const key of [
    'components',
    'services',
    'modules',
    'remotes',
    'processes',
    'packages',
    'jobs',
    'fragments',
    'log',
  ]) {
    const value = record[key];
    if (value === undefined || value === null) continue;
    if (!Array.isArray(value)) throw invalidArgument(`${field}.${key}`, 'must be a list', describe(value));
    value.forEach((item, index) => {
      const path = `${field}.${key}[${index}]`;
      if (key === 'fragments' && typeof item === 'string') return;
      if (item === null || typeof item !== 'object' || Array.isArray(item))
        throw invalidArgument(path, 'must be a JSON object', describe(item));
      if (['components', 'services', 'modules', 'remotes', 'packages', 'jobs'].includes(key)) {
        const name = (item as Record<string, unknown>).name;
        if (typeof name !== 'string' || name.trim() === '')
          throw invalidArgument(`${path}.name`, 'is required and must be a non-empty string');
      }
    });
  }
  for (const key of ['network', 'auth', 'agent', 'maintenance', 'tracing', 'cloud']) {
    const value = record[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'object' || Array.isArray(value))
      throw invalidArgument(`${field}.${key}`, 'must be a JSON object', describe(value));
  }
  for (const key of ['debug', 'enable_web_profile', 'disable_partial_start', 'disable_log_deduplication']) {
    const value = record[key];
    if (value !== undefined && value !== null && typeof value !== 'boolean') {
      throw invalidArgument(`${field}.${key}`, 'must be true or false', describe(value));
    }
  }
  parseTriggers(`${field}.triggers`, record.triggers);
  return record;
}

function describe(value: unknown): string {
  return Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value;
}

/**
 * Optimistic concurrency: an editor that last saw the part at `lastKnownUpdate` may only save when
 * nobody changed it since. Times compare at millisecond precision (what we store).
 */
export function requireFreshEdit(lastKnownUpdate: Date | undefined, lastUpdated: Date): void {
  if (lastKnownUpdate === undefined) return;
  if (Math.floor(lastKnownUpdate.getTime()) < lastUpdated.getTime()) {
    throw failedPrecondition(
      `last_known_update: the part was changed at ${lastUpdated.toISOString()}, after the ${lastKnownUpdate.toISOString()} ` +
        'this edit is based on; reload the part and apply the change again',
    );
  }
}

/** The configuration as pretty JSON text (`GetRobotPartResponse.config_json`). */
export function configJsonOf(config: Record<string, unknown>): string {
  return JSON.stringify(config, null, 2);
}
