/**
 * Per-logger levels from the configuration (machine-runtime.md A4.3, service-spec "Log precedence"):
 *
 * - `log: [{pattern, level}]`: a pattern becomes the anchored regex `^…$` with `.` a literal dot and
 *   `*` any text (every other character is passed through as regex). Entries are processed top to
 *   bottom and the last one that matches a logger wins. An entry whose regex does not compile or
 *   whose level does not parse is skipped with a warning.
 * - A resource's `log_configuration.level` is an extra rule for `rdk.resource_manager.<full name>` (and
 *   its sub-loggers) placed after the `log` entries, so it beats them.
 * - A logger no rule matches takes the level of its nearest ancestor a rule matches (so a resource's
 *   sub-loggers follow the resource), else the default (info).
 * - Debug mode (`debug: true` or `-debug`) beats all of it; that is applied by the logging system.
 */
import { type LogLevel, parseLogLevel } from './logger.ts';

export interface LogPatternEntry {
  readonly pattern: string;
  readonly level: string;
}

export interface ResourceLogLevel {
  /** Full resource name, e.g. `rdk:component:sensor/s1`. */
  readonly resourceName: string;
  readonly level: LogLevel;
}

export interface LogLevelRule {
  /** As written (`log` entries) or the resource logger name. */
  readonly source: string;
  readonly matches: (loggerName: string) => boolean;
  readonly level: LogLevel;
}

export interface LogRuleWarning {
  readonly message: string;
  readonly fields: Readonly<Record<string, string | number>>;
}

export interface LogLevelRules {
  readonly rules: readonly LogLevelRule[];
  /** One per skipped `log` entry. */
  readonly warnings: readonly LogRuleWarning[];
  /** The level a logger gets from the rules (without debug mode). */
  levelFor(loggerName: string): LogLevel;
}

export const resourceLoggerPrefix = 'rdk.resource_manager.';

/** `rdk.resource_manager.*` → /^rdk\.resource_manager\..*$/; throws SyntaxError when the result is no regex. */
export function logPatternToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.replaceAll('.', '\\.').replaceAll('*', '.*')}$`);
}

/** The logger a resource logs to, e.g. `rdk.resource_manager.rdk:component:sensor/s1`. */
export function resourceLoggerName(resourceName: string): string {
  return `${resourceLoggerPrefix}${resourceName}`;
}

export function compileLogLevelRules(
  log: readonly LogPatternEntry[],
  resourceLevels: readonly ResourceLogLevel[] = [],
  defaultLevel: LogLevel = 'info',
): LogLevelRules {
  const rules: LogLevelRule[] = [];
  const warnings: LogRuleWarning[] = [];
  log.forEach((entry, index) => {
    let regex: RegExp;
    try {
      regex = logPatternToRegExp(entry.pattern);
    } catch (error) {
      warnings.push({
        message: 'Log regex did not compile',
        fields: { field: `log[${index}].pattern`, pattern: entry.pattern, error: (error as Error).message },
      });
      return;
    }
    const level = parseLogLevel(entry.level);
    if (!level) {
      warnings.push({
        message: 'Log level did not parse',
        fields: { field: `log[${index}].level`, level: entry.level, allowed: 'debug, info, warn, error' },
      });
      return;
    }
    rules.push({ source: entry.pattern, matches: (name) => regex.test(name), level });
  });
  for (const { resourceName, level } of resourceLevels) {
    const loggerName = resourceLoggerName(resourceName);
    const prefix = `${loggerName}.`;
    rules.push({
      source: loggerName,
      matches: (name) => name === loggerName || name.startsWith(prefix),
      level,
    });
  }
  return {
    rules,
    warnings,
    levelFor(loggerName) {
      for (let name: string | undefined = loggerName; name !== undefined; name = parentLoggerName(name)) {
        const level = lastMatchingLevel(rules, name);
        if (level) return level;
      }
      return defaultLevel;
    },
  };
}

export interface ModuleLogLevelInput {
  readonly moduleName: string;
  /** The module entry's `log_level`. */
  readonly logLevel?: LogLevel;
  /** Debug mode: config `debug` or the `-debug` flag. */
  readonly debug: boolean;
  readonly log: readonly LogPatternEntry[];
}

/**
 * The `--log-level=<level>` a module is started with (A4.2, A4.5), or undefined for none: the module's
 * own `log_level` (like a resource's `log_configuration`, it is explicit); else `debug` in debug mode;
 * else `debug` when the last `log` entry matching the module's name says debug. Module SDKs treat only
 * `debug` as debug, anything else as info.
 */
export function moduleLogLevel(input: ModuleLogLevelInput): LogLevel | undefined {
  if (input.logLevel) return input.logLevel;
  if (input.debug) return 'debug';
  const rules = compileLogLevelRules(input.log).rules;
  return lastMatchingLevel(rules, input.moduleName) === 'debug' ? 'debug' : undefined;
}

function lastMatchingLevel(rules: readonly LogLevelRule[], loggerName: string): LogLevel | undefined {
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index] as LogLevelRule;
    if (rule.matches(loggerName)) return rule.level;
  }
  return undefined;
}

function parentLoggerName(name: string): string | undefined {
  // Resource names contain no dots, so `rdk.resource_manager.rdk:component:sensor/s1` has the parent
  // `rdk.resource_manager`.
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : undefined;
}
