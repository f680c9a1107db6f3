/**
 * `mcloud:example:counter` (rdk:component:sensor): each GetReadings answers `{count, step}` and
 * counts up by `step`. With `source` (the name of another sensor) it is an implicit dependency found
 * by ValidateConfig and its readings are included under `source` — read through the parent.
 *
 * DoCommand: `{"reset": true}` sets the count to 0; `{"log": {"level": "debug", "message": "…"}}`
 * writes a log entry (it reaches the parent's logger through RobotService.Log); `{"info": true}`
 * answers the process id, working directory and the VIAM_MODULE_* environment the parent gave.
 */
import {
  defineModel,
  type JsonObject,
  ModuleError,
  type Readings,
  type ResourceConfig,
  type Sensor,
  sensorApi,
  sensorDefinition,
} from '@mcloud/module-sdk';

export const counterModel = 'mcloud:example:counter';

interface CounterAttributes {
  step: number;
  source?: string;
}

function parseAttributes(config: ResourceConfig): CounterAttributes {
  const { step = 1, source } = config.attributes;
  if (typeof step !== 'number' || !Number.isFinite(step) || Math.abs(step) > 1e6) {
    throw new ModuleError(
      'InvalidArgument',
      `attributes.step: must be a number in [-1e6, 1e6] (got ${JSON.stringify(step)})`,
    );
  }
  if (source !== undefined && (typeof source !== 'string' || source === '')) {
    throw new ModuleError(
      'InvalidArgument',
      `attributes.source: must be a sensor name (got ${JSON.stringify(source)})`,
    );
  }
  return source === undefined ? { step } : { step, source };
}

export const counterSensor = defineModel<Sensor>({
  api: sensorDefinition,
  model: counterModel,
  validate(config) {
    const { source } = parseAttributes(config);
    return { dependencies: source ? [source] : [] };
  },
  async create({ config, dependencies, logger }) {
    const attributes = parseAttributes(config);
    const source = attributes.source ? dependencies.get<Sensor>(sensorApi, attributes.source) : undefined;
    let count = 0;
    logger.info('counter created', { step: attributes.step, source: attributes.source ?? null });
    return {
      name: { api: config.api, name: config.name },
      async getReadings(options) {
        count += attributes.step;
        logger.debug('reading', { count });
        const readings: Readings = { count, step: attributes.step };
        if (source) readings.source = await source.getReadings({ signal: options.signal });
        return readings;
      },
      async doCommand(command: JsonObject): Promise<JsonObject> {
        if (command.info === true) {
          const env = process.env;
          return {
            pid: process.pid,
            cwd: process.cwd(),
            module_name: env.VIAM_MODULE_NAME ?? null,
            module_data: env.VIAM_MODULE_DATA ?? null,
            module_root: env.VIAM_MODULE_ROOT ?? null,
            viam_home: env.VIAM_HOME ?? null,
            argv: process.argv.slice(2),
          };
        }
        if (command.reset === true) {
          count = 0;
          return { count };
        }
        const log = command.log;
        if (typeof log === 'object' && log !== null && !Array.isArray(log)) {
          const level = log.level;
          const message = String(log.message ?? '');
          if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error') {
            throw new ModuleError(
              'InvalidArgument',
              `command.log.level: must be debug, info, warn or error (got ${JSON.stringify(level)})`,
            );
          }
          logger[level](message);
          return { logged: true };
        }
        throw new ModuleError(
          'Unimplemented',
          `command: unknown command ${JSON.stringify(Object.keys(command))}`,
        );
      },
      async close() {
        logger.info('counter closed', { count });
      },
    };
  },
});
