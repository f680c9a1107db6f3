import { invalidArgument } from '../errors.ts';
import { compileLinearRegExp } from './linear-regexp.ts';

/**
 * Largest `seconds_between_notifications` (30 days): a `trigger_rate_limits` row older than this limits
 * nothing any more, so delivery retention deletes it.
 */
export const maxSecondsBetweenNotifications = 30 * 86_400;

/**
 * The `triggers` array of a machine part's configuration (service spec, "Trigger" tables), parsed and
 * validated. Saving a configuration with an invalid trigger fails with the path of the offending field,
 * e.g. `config.triggers[0].event.conditional.conditions.evals[1].operator`.
 */
export const triggerEventTypes = [
  'part_online',
  'part_offline',
  'part_data_ingested',
  'conditional_data_ingested',
  'conditional_logs_ingested',
] as const;
export type TriggerEventType = (typeof triggerEventTypes)[number];

export const triggerDataTypes = ['binary', 'tabular', 'file', 'unspecified'] as const;
export type TriggerDataType = (typeof triggerDataTypes)[number];

export const triggerLogLevels = ['error', 'warn', 'info'] as const;
export type TriggerLogLevel = (typeof triggerLogLevels)[number];

export const evalOperators = ['lt', 'gt', 'lte', 'gte', 'eq', 'neq', 'regex'] as const;
export type EvalOperator = (typeof evalOperators)[number];

/** The literal notification value that means "every owner of the machine's organization". */
export const allMachineOwners = 'all_machine_owners';

export interface TriggerEval {
  operator: EvalOperator;
  /** A scalar, or an object whose keys follow the nesting of the readings down to scalar leaves. */
  value: unknown;
}

export interface DataCaptureMethod {
  componentType: string;
  componentName: string;
  method: string;
}

export interface TriggerNotification {
  type: 'webhook' | 'email';
  /** A webhook URL, an email address, or `all_machine_owners` (email only). */
  value: string;
  /** Minimum seconds between two notifications of this trigger to this destination (0 = no limit). */
  secondsBetweenNotifications: number;
  /** Standard Webhooks signing secret (`whsec_<base64>`), our extension; webhooks only. */
  signingSecret: string | undefined;
}

export interface TriggerConfig {
  name: string;
  eventType: TriggerEventType;
  dataTypes: TriggerDataType[];
  logLevels: TriggerLogLevel[];
  conditional: { method: DataCaptureMethod; evals: TriggerEval[] } | undefined;
  notifications: TriggerNotification[];
  notes: string | undefined;
}

const maxTriggers = 100;
const maxNotifications = 20;
const maxEvals = 50;
const maxEvalDepth = 8;
const maxRegexChars = 1_000;
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Parses `config.triggers` (absent/null = none). Throws InvalidArgument naming the field path. */
export function parseTriggers(field: string, value: unknown): TriggerConfig[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidArgument(field, 'must be a list', kind(value));
  if (value.length > maxTriggers)
    throw invalidArgument(field, `must contain at most ${maxTriggers} triggers`, value.length);
  const names = new Set<string>();
  return value.map((item, index) => {
    const trigger = parseTrigger(`${field}[${index}]`, item);
    if (names.has(trigger.name))
      throw invalidArgument(`${field}[${index}].name`, 'must be unique among the triggers', trigger.name);
    names.add(trigger.name);
    return trigger;
  });
}

function parseTrigger(path: string, item: unknown): TriggerConfig {
  const record = object(path, item);
  const name = record.name;
  if (typeof name !== 'string' || name.trim() === '')
    throw invalidArgument(`${path}.name`, 'is required and must be a non-empty string');
  if (name.length > 200) throw invalidArgument(`${path}.name`, 'must be at most 200 characters', name);
  const notes = record.notes;
  if (notes !== undefined && notes !== null && typeof notes !== 'string')
    throw invalidArgument(`${path}.notes`, 'must be a string', kind(notes));
  const event = object(`${path}.event`, record.event);
  const eventType = event.type;
  if (typeof eventType !== 'string' || !(triggerEventTypes as readonly string[]).includes(eventType))
    throw invalidArgument(`${path}.event.type`, `must be one of ${triggerEventTypes.join(', ')}`, eventType);
  const type = eventType as TriggerEventType;
  let dataTypes: TriggerDataType[] = [];
  let logLevels: TriggerLogLevel[] = [];
  let conditional: TriggerConfig['conditional'];
  if (type === 'part_data_ingested') {
    const ingested = object(`${path}.event.data_ingested`, event.data_ingested);
    dataTypes = enumList(`${path}.event.data_ingested.data_types`, ingested.data_types, triggerDataTypes);
  } else if (type === 'conditional_logs_ingested') {
    logLevels = enumList(`${path}.event.log_levels`, event.log_levels, triggerLogLevels);
  } else if (type === 'conditional_data_ingested') {
    conditional = parseConditional(`${path}.event.conditional`, event.conditional);
  }
  const notifications = record.notifications;
  if (!Array.isArray(notifications) || notifications.length === 0)
    throw invalidArgument(`${path}.notifications`, 'must be a non-empty list', kind(notifications));
  if (notifications.length > maxNotifications)
    throw invalidArgument(
      `${path}.notifications`,
      `must contain at most ${maxNotifications} entries`,
      notifications.length,
    );
  return {
    name,
    eventType: type,
    dataTypes,
    logLevels,
    conditional,
    notifications: notifications.map((n, i) => parseNotification(`${path}.notifications[${i}]`, n)),
    notes: typeof notes === 'string' ? notes : undefined,
  };
}

function parseConditional(path: string, value: unknown): NonNullable<TriggerConfig['conditional']> {
  const record = object(path, value);
  const methodText = record.data_capture_method;
  const parts = typeof methodText === 'string' ? methodText.split(':') : [];
  if (parts.length !== 3 || parts.some((p) => p.trim() === ''))
    throw invalidArgument(
      `${path}.data_capture_method`,
      'must have the form <component>:<component-name>:<method>, e.g. sensor:my-sensor:Readings',
      methodText,
    );
  const [componentType, componentName, method] = parts as [string, string, string];
  const conditions = record.conditions;
  let evals: TriggerEval[] = [];
  if (conditions !== undefined && conditions !== null) {
    const c = object(`${path}.conditions`, conditions);
    if (c.evals !== undefined && c.evals !== null) {
      if (!Array.isArray(c.evals))
        throw invalidArgument(`${path}.conditions.evals`, 'must be a list', kind(c.evals));
      if (c.evals.length > maxEvals)
        throw invalidArgument(
          `${path}.conditions.evals`,
          `must contain at most ${maxEvals} entries`,
          c.evals.length,
        );
      evals = c.evals.map((e, i) => parseEval(`${path}.conditions.evals[${i}]`, e));
    }
  }
  return { method: { componentType, componentName, method }, evals };
}

function parseEval(path: string, value: unknown): TriggerEval {
  const record = object(path, value);
  const operator = record.operator;
  if (typeof operator !== 'string' || !(evalOperators as readonly string[]).includes(operator))
    throw invalidArgument(`${path}.operator`, `must be one of ${evalOperators.join(', ')}`, operator);
  if (!('value' in record) || record.value === undefined)
    throw invalidArgument(`${path}.value`, 'is required');
  checkEvalValue(`${path}.value`, operator as EvalOperator, record.value, 0);
  return { operator: operator as EvalOperator, value: record.value };
}

function checkEvalValue(path: string, operator: EvalOperator, value: unknown, depth: number): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    if (depth >= maxEvalDepth) throw invalidArgument(path, `must nest at most ${maxEvalDepth} levels`);
    const entries = Object.entries(value);
    if (entries.length === 0) throw invalidArgument(path, 'must name at least one reading field');
    for (const [key, leaf] of entries) checkEvalValue(`${path}.${key}`, operator, leaf, depth + 1);
    return;
  }
  if (Array.isArray(value)) throw invalidArgument(path, 'must be a number, string, bool or object', 'a list');
  if (operator === 'regex') {
    if (typeof value !== 'string')
      throw invalidArgument(path, 'must be a regular expression string', kind(value));
    try {
      new RegExp(value);
    } catch (error) {
      throw invalidArgument(path, `must be a valid regular expression: ${(error as Error).message}`, value);
    }
    if (value.length > maxRegexChars)
      throw invalidArgument(
        path,
        `must be at most ${maxRegexChars} characters`,
        `${value.length} characters`,
      );
    try {
      compileLinearRegExp(value);
    } catch {
      throw invalidArgument(
        path,
        'must be a regular expression that runs in linear time (no backreferences such as \\1)',
        value,
      );
    }
    return;
  }
  if (['lt', 'gt', 'lte', 'gte'].includes(operator)) {
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw invalidArgument(path, `must be a number for ${operator}`, kind(value));
    return;
  }
  if (value !== null && !['number', 'string', 'boolean'].includes(typeof value))
    throw invalidArgument(path, 'must be a number, string, bool or null', kind(value));
}

function parseNotification(path: string, value: unknown): TriggerNotification {
  const record = object(path, value);
  const type = record.type;
  if (type !== 'webhook' && type !== 'email')
    throw invalidArgument(`${path}.type`, 'must be webhook or email', type);
  const target = record.value;
  if (typeof target !== 'string' || target.trim() === '')
    throw invalidArgument(`${path}.value`, 'is required and must be a non-empty string');
  if (type === 'webhook') {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      throw invalidArgument(`${path}.value`, 'must be an absolute http(s) URL', redactUrl(target));
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalidArgument(`${path}.value`, 'must be an http or https URL', url.protocol);
  } else if (target !== allMachineOwners && !emailPattern.test(target)) {
    throw invalidArgument(`${path}.value`, `must be an email address or ${allMachineOwners}`, target);
  }
  const seconds = record.seconds_between_notifications;
  if (
    seconds !== undefined &&
    seconds !== null &&
    (typeof seconds !== 'number' ||
      !Number.isFinite(seconds) ||
      seconds < 0 ||
      seconds > maxSecondsBetweenNotifications)
  )
    throw invalidArgument(
      `${path}.seconds_between_notifications`,
      `must be a number from 0 to ${maxSecondsBetweenNotifications} (30 days)`,
      seconds,
    );
  const secret = record.signing_secret;
  if (secret !== undefined && secret !== null) {
    if (type !== 'webhook') throw invalidArgument(`${path}.signing_secret`, 'applies to webhooks only');
    if (typeof secret !== 'string' || !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret))
      throw invalidArgument(
        `${path}.signing_secret`,
        'must be whsec_ followed by base64 (Standard Webhooks)',
      );
    const bytes = Buffer.from(secret.slice(6), 'base64').length;
    if (bytes < 24 || bytes > 64)
      throw invalidArgument(`${path}.signing_secret`, 'must decode to 24 to 64 bytes', `${bytes} bytes`);
  }
  return {
    type,
    value: target,
    secondsBetweenNotifications: typeof seconds === 'number' ? seconds : 0,
    signingSecret: typeof secret === 'string' ? secret : undefined,
  };
}

/** A URL without its user-info (Basic credentials are never shown in errors or logs). */
export function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (!url.username && !url.password) return text;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return text.replace(/\/\/[^/@]*@/, '//');
  }
}

function enumList<T extends string>(path: string, value: unknown, allowed: readonly T[]): T[] {
  if (!Array.isArray(value) || value.length === 0)
    throw invalidArgument(path, `must be a non-empty list of ${allowed.join(', ')}`, kind(value));
  return value.map((v, i) => {
    if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
      throw invalidArgument(`${path}[${i}]`, `must be one of ${allowed.join(', ')}`, v);
    return v as T;
  });
}

function object(path: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalidArgument(path, 'is required and must be a JSON object', kind(value));
  return value as Record<string, unknown>;
}

function kind(value: unknown): string {
  return Array.isArray(value)
    ? 'a list'
    : value === null
      ? 'null'
      : typeof value === 'object'
        ? 'an object'
        : typeof value === 'string'
          ? JSON.stringify(value)
          : String(value);
}
